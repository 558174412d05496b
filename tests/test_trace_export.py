"""The Chrome trace-event export opens as per-CPU tracks (the format Perfetto reads)."""

from __future__ import annotations

import json

from simsrv.cli.main import main

REQUIRED_X = {"name", "ph", "ts", "dur", "pid", "tid"}  # complete events
REQUIRED_M = {"name", "ph", "pid", "tid", "args"}  # metadata events


def test_ten_frame_run_exports_valid_per_cpu_tracks(tmp_path, capsys):
    path = tmp_path / "run.json"
    argv = [
        "run",
        "--set",
        "server.strategy=area-quadrant",
        "--set",
        "machine.cpus=4",
        "--set",
        "run.warmup_s=0",
        "--set",
        "run.duration_s=0.02",
        "--trace",
        str(path),
    ]
    assert main(argv) == 0
    capsys.readouterr()
    doc = json.loads(path.read_text())
    events = doc["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    meta = [e for e in events if e["ph"] == "M"]
    assert complete and all(e.keys() >= REQUIRED_X for e in complete)
    assert all(e.keys() >= REQUIRED_M for e in meta)
    assert all(isinstance(e["ts"], float | int) and e["dur"] >= 0 for e in complete)
    frames = {e["args"]["frame"] for e in complete}
    assert len(frames) >= 10
    # one process per CPU, named, each with named thread tracks
    processes = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    assert processes == {cpu: f"CPU {cpu}" for cpu in range(4)}
    tracks = {(e["pid"], e["tid"]) for e in meta if e["name"] == "thread_name"}
    assert {(e["pid"], e["tid"]) for e in complete} <= tracks
    # events on one track never overlap (they must nest for the viewer; ours are sequential)
    by_track: dict = {}
    for e in complete:
        by_track.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for intervals in by_track.values():
        intervals.sort()
        for (_, end), (start, _) in zip(intervals, intervals[1:], strict=False):
            assert start >= end - 2e-3  # ts and dur are each rounded to 1e-3 us
    names = {e["name"] for e in complete}
    assert {"request", "reply", "barrier_wait"} <= names
    waits = {e["cat"] for e in complete if e["name"].endswith("_wait")}
    assert waits == {"wait"}


def test_the_trace_leaves_the_warmup_out_unless_asked_and_says_where_it_went(tmp_path, capsys):
    import pandas as pd

    window = ["--set", "run.warmup_s=0.1", "--set", "run.duration_s=0.05"]
    measured, everything = tmp_path / "measured.csv", tmp_path / "all.csv"
    assert main(["run", *window, "--trace", str(measured)]) == 0
    said = capsys.readouterr().err
    assert str(measured) in said and "warm-up left out" in said
    measured_said = said
    assert main(["run", *window, "--trace", str(everything), "--trace-warmup"]) == 0
    said = capsys.readouterr().err
    assert str(everything) in said and "warm-up included" in said
    cut, full = pd.read_csv(measured), pd.read_csv(everything)
    assert cut["start_s"].min() >= 0.1 and cut["end_s"].max() <= 0.15 + 1e-12
    assert full["start_s"].min() < 0.1 and len(full) > len(cut)
    # the measured intervals are the full trace's, cut to the window
    inside = full[(full["start_s"] >= 0.1) & (full["end_s"] <= 0.15)]
    assert len(inside) <= len(cut)
    assert f": {len(cut)} intervals" in measured_said
