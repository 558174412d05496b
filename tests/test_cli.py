"""The command line: output formats and the exit-2 contract for bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from simsrv.cli.main import main

SHORT = ["--set", "run.duration_s=0.3", "--set", "run.warmup_s=0.1"]
JSON_KEYS = {
    "frames_per_s",
    "messages_per_frame",
    "messages_per_s",
    "replies_per_s",
    "dropped_fraction",
    "parallel_fraction",
    "cpu_utilization",
    "time_breakdown",
    "simulated_time_s",
    "frames",
    "scenario",
    "seed",
    "simsrv_version",
    "wall_time_s",
}


def test_run_json_has_the_documented_keys(capsys):
    assert main(["run", *SHORT, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= JSON_KEYS
    assert data["scenario"]["machine"]["cpus"] == 2
    assert len(data["cpu_utilization"]) == 2
    assert data["simulated_time_s"] == pytest.approx(0.3)


def test_run_table_and_trace_file(capsys, tmp_path):
    trace = tmp_path / "t.parquet"
    assert main(["run", *SHORT, "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "frames/s" in out and "messages/frame" in out
    import pandas as pd

    df = pd.read_parquet(trace)
    assert {"frame", "cpu", "activity", "start_s", "end_s", "busy"} <= set(df.columns)


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--set", "machine.cpus=0"],  # out of range
        ["run", "--set", "players.count=many"],  # wrong type
        ["run", "--set", "map.colour=red"],  # unknown key
        ["run", "missing.toml"],  # missing file
        ["run", "--trace", "out.txt"],  # unsupported trace format
        ["run", "--frobnicate"],  # unknown flag
        ["nosuchcommand"],  # unknown subcommand
        ["capacity", "--min-reply-ratio", "1.5"],  # out of (0, 1]
        ["run", "--set", "server.strategy=area-quadrant", "--set", 'server.options.stage2="fast"'],
    ],
)
def test_bad_input_exits_2_with_one_line(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        raise SystemExit(main(argv))
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("simsrv")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--trace", "{blocker}/t.csv"], "--trace: {blocker} exists and is not a directory"),
        (["compare", "--out", "{blocker}/x"], "--out: cannot create directory {blocker}/x"),
        (["sweep", "{sweep}", "--out", "{blocker}"], "--out: {blocker} exists and is not"),
        (["map", "--out", "{blocker}/m.png"], "--out: {blocker} exists and is not a directory"),
        (["map", "--export", "{tmp}"], "--export: {tmp} is a directory, not a file"),
        (["calibrate", "cordeiro2007-xeon", "--out", "{tmp}"], "--out: {tmp} is a directory"),
        # /proc passes a permission check but takes no new file: creating one is the test
        (["run", "--trace", "/proc/x.json"], "--trace: cannot write in /proc"),
        (["map", "--out", "/proc/m.png"], "--out: cannot write in /proc"),
        (["map", "--export", "/proc/e.toml"], "--export: cannot write in /proc"),
        (["compare", "--out", "/proc/cmp"], "--out: cannot create directory /proc/cmp"),
        (["sweep", "{sweep}", "--out", "/proc/self"], "--out: cannot write in /proc/self"),
        (["calibrate", "cordeiro2007-xeon", "--out", "/proc/c.toml"], "--out: cannot write in"),
        (["map", "--out", "m.png", "--time", "nan"], "--time: must be a finite number"),
        (["compare", "--duration-s", "inf"], "--duration-s: must be a finite number"),
        (["capacity", "--start", "100", "--max", "10"], "--start: must be <= --max (10)"),
        (["map", "--out", "m.png", "--frames", "2"], "--frames: must be 1 for a .png picture"),
    ],
)
def test_unusable_outputs_and_flags_are_refused_before_any_run(
    argv, message, tmp_path, capsys, monkeypatch
):
    import simsrv.pipeline.result

    def must_not_run(*args, **kwargs):
        raise AssertionError("a run started before the output path was checked")

    monkeypatch.setattr(simsrv.pipeline.result, "simulate", must_not_run)
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a directory is needed\n")
    sweep = tmp_path / "sweep.toml"
    base = Path(__file__).parents[1] / "scenarios" / "cube-160.toml"
    sweep.write_text(f'base = "{base}"\nseeds = 1\n[grid]\n"machine.cpus" = [1]\n')
    names = {"blocker": blocker, "sweep": sweep, "tmp": tmp_path}
    with pytest.raises(SystemExit) as exited:  # argparse's own errors exit, ours return 2
        raise SystemExit(main([arg.format(**names) for arg in argv]))
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message.format(**names) in err


def test_the_output_file_check_leaves_no_file_and_keeps_an_existing_one(tmp_path):
    from simsrv.cli.parser import prepare_output_file

    new = tmp_path / "deep" / "trace.csv"
    prepare_output_file(new, "--trace")
    assert new.parent.is_dir() and not new.exists()
    assert list(new.parent.iterdir()) == []  # no write-test file left behind either
    old = tmp_path / "old.csv"
    old.write_text("kept\n")
    prepare_output_file(old, "--trace")
    assert old.read_text() == "kept\n"


def test_capacity_keeps_the_measured_points_when_a_later_count_fails(capsys, monkeypatch):
    import simsrv.sweep.capacity as capacity
    from simsrv.core.errors import InputError

    point = {"clients": 8, "replies_per_s": 250.0, "offered_per_s": 250.0}
    point |= {"dropped_fraction": 0.0, "met": True}

    def fails_at_the_second_count(*args, result, on_point, **kwargs):
        result.points.append(point)
        result.capacity_clients = 8
        on_point(point)
        raise InputError("players.count: could not find positions for all 16 players")

    monkeypatch.setattr(capacity, "find_capacity", fails_at_the_second_count)
    assert main(["capacity", "--json"]) == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out)["points"] == [point]
    assert (
        captured.err
        == "simsrv: error: players.count: could not find positions for all 16 players\n"
    )


def test_malformed_toml_exits_2_without_traceback(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[machine]\ncpus = = 2\n")
    proc = subprocess.run(
        [sys.executable, "-m", "simsrv", "run", str(bad)], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0
    assert "is not valid TOML" in proc.stderr


def test_help_describes_every_option(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = capsys.readouterr().out
    for option in ("--set", "--json", "--trace", "scenario"):
        assert option in text
