"""``simsrv compare``: table, files and figures; bad flags; an interruption keeps finished runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from simsrv.cli.main import main
from simsrv.sweep import CompareResults
from simsrv.sweep import progress as progress_module
from tests.child_signals import default_sigint

TINY = ["--set", "run.duration_s=0.15", "--set", "run.warmup_s=0.05", "--set", "players.count=32"]


def _status(argv: list[str]) -> int:
    """The exit status of ``simsrv ARGV`` (argparse exits on its own errors)."""
    try:
        return main(argv)
    except SystemExit as done:
        return int(done.code)


def test_compare_prints_the_table_and_writes_tables_and_figures(tmp_path, capsys):
    argv = ["compare", *TINY, "--strategies", "sequential,bsp-group", "--cpus", "2,4"]
    assert main([*argv, "--seeds", "2", "--workers", "1", "--out", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["strategy", "cpus", "clients", "frames/s"]
    assert [line.split()[:3] for line in lines[2:6]] == [
        ["sequential", "2", "32"],
        ["sequential", "4", "32"],
        ["bsp-group", "2", "32"],
        ["bsp-group", "4", "32"],
    ]
    assert "±" in lines[2] and "over 2 seeds" in out
    assert err.count("ok\n") == 8  # one progress line per run (stderr is not a terminal)
    runs = pd.read_parquet(tmp_path / "runs.parquet")
    assert len(runs) == 8 and runs["error"].isna().all()
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert set(summary["metric"]) >= {"frames_per_s", "parallel_fraction", "wall_time_s"}
    for stem in ("throughput", "parallel_fraction", "breakdown", "load_balance", "gantt"):
        for suffix in ("png", "svg"):
            assert (tmp_path / "figures" / f"{stem}.{suffix}").stat().st_size > 1000
    assert (tmp_path / "figures" / "group_sizes.png").exists()  # bsp-group groups entities
    _check_report(tmp_path, out)


def _check_report(out_dir, printed: str) -> None:
    """report.html: the printed table, every PNG figure embedded byte for byte, the scenario
    and provenance, nothing loaded from elsewhere."""
    import base64
    import html
    import re

    page = (out_dir / "report.html").read_text(encoding="utf-8")
    table = printed[: printed.index("seeds)") + len("seeds)")]
    assert html.escape(table) in page
    embedded = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    pngs = sorted((out_dir / "figures").glob("*.png"))
    assert len(embedded) == len(pngs) == 7
    assert {base64.b64decode(e) for e in embedded} == {p.read_bytes() for p in pngs}
    assert "http://" not in page.replace('xmlns="http://', "") and "https://" not in page
    assert "<h2>Scenario</h2>" in page and "&quot;players&quot;" in page
    assert "scenario hashes" in page and "simsrv compare" in page


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--strategies", "nope"], "--strategies: unknown strategy 'nope'; allowed: "),
        (["--strategies", "sequential,sequential"], "--strategies: names must be distinct"),
        (["--cpus", "0"], "--cpus: every value must be a whole number >= 1, got 0"),
        (["--cpus", "two"], "argument --cpus: expected whole numbers separated by commas"),
        (["--clients", "8,8"], "--clients: values must be distinct"),
        (["--seeds", "0"], "--seeds: must be a whole number >= 1"),
        (["--workers", "0"], "--workers: must be a whole number >= 1"),
        (["--duration-s", "0"], "--duration-s: must be a number of seconds > 0"),
        (["--set", "players.count=-1"], "players.count"),
    ],
)
def test_bad_flags_are_one_line_errors_with_status_2(flags, message, tmp_path, capsys):
    earlier = tmp_path / "out" / "runs.parquet"  # an earlier comparison's results survive
    earlier.parent.mkdir()
    earlier.write_text("earlier")
    assert _status(["compare", *flags, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert earlier.read_text() == "earlier"


def test_out_must_be_a_directory(tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("x")
    assert main(["compare", "--out", str(target)]) == 2
    assert "--out: " in capsys.readouterr().err


def test_an_interrupted_comparison_keeps_and_reports_the_finished_runs(
    tmp_path, capsys, monkeypatch
):
    real_update = progress_module.Progress.update

    def interrupt_after_two(self, label, error=None):
        real_update(self, label, error)
        if self.done == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(progress_module.Progress, "update", interrupt_after_two)
    argv = ["compare", *TINY, "--strategies", "sequential", "--cpus", "1,2", "--seeds", "2"]
    assert main([*argv, "--workers", "1", "--out", str(tmp_path)]) == 130
    out, err = capsys.readouterr()
    assert "2 runs of 4 (interrupted)" in out
    assert "simsrv: interrupted" in err
    assert len(pd.read_parquet(tmp_path / "runs.parquet")) == 2
    assert (tmp_path / "figures" / "throughput.png").exists()
    saved = CompareResults.load(tmp_path)
    assert (saved.planned, saved.complete) == (4, False)


def test_a_new_comparison_replaces_the_tables_of_an_older_one(tmp_path, capsys):
    base = ["compare", *TINY, "--cpus", "2", "--seeds", "1", "--workers", "1"]
    assert main([*base, "--strategies", "bsp-group", "--out", str(tmp_path)]) == 0
    assert main([*base, "--strategies", "sequential", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    assert set(pd.read_parquet(tmp_path / "runs.parquet")["strategy"]) == {"sequential"}
    assert not (tmp_path / "group_sizes.parquet").exists()


def _descendants(pid: int) -> set[tuple[int, str]]:
    """The processes below ``pid`` (Linux /proc), each as (pid, start time): a pid the kernel
    reuses later is another process."""
    found: set[tuple[int, str]] = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        for child in map(int, task.read_text().split()):
            start = _start_time(child)
            if start is not None:
                found |= {(child, start)} | _descendants(child)
    return found


def _start_time(pid: int) -> str | None:
    """The start time of ``pid`` (None: no such process, not even a zombie)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19]
    except (FileNotFoundError, ProcessLookupError):
        return None


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_comparison_killed_mid_run_leaves_no_worker_behind(tmp_path, signum):
    """SIGTERM on ``simsrv compare`` left its two pool workers running
    (orphans), and after SIGINT the command waited for the runs in flight, its workers
    orphaned if it was killed meanwhile.  Both signals interrupt it (exit 130, what finished
    is kept) and every worker is gone, reaped, by the time it has exited."""
    command = [sys.executable, "-m", "simsrv", "compare", "--strategies", "sequential,bsp-group"]
    command += ["--cpus", "2", "--seeds", "1", "--duration-s", "600", "--workers", "2"]
    proc = subprocess.Popen(
        [*command, "--out", str(tmp_path / "out")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=default_sigint,
    )
    workers: set[tuple[int, str]] = set()
    try:
        deadline = time.monotonic() + 60
        while len(workers) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
            workers = _descendants(proc.pid)
        assert len(workers) >= 2, "the pool did not start"
        time.sleep(1.0)  # the workers are running simulations
        proc.send_signal(signum)
        assert proc.wait(timeout=15) == 130  # not after the runs in flight (~30 s more)
        left = [pid for pid, start in workers if _start_time(pid) == start]
        assert left == [], f"workers outlived the command: {left}"
    finally:
        proc.kill()
        for pid, start in workers:
            if _start_time(pid) == start:
                os.kill(pid, signal.SIGKILL)
