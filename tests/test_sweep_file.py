"""``simsrv sweep``: the sweep file, the Parquet store, resuming, and the Dask backend."""

from __future__ import annotations

import html
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from simsrv.cli.main import main
from simsrv.core.errors import InputError
from simsrv.sweep import out_lock
from simsrv.sweep.records import VOLATILE
from simsrv.sweep.spec import load_sweep
from simsrv.sweep.store import SweepStore
from simsrv.sweep.sweep import pending, run_sweep

ROOT = Path(__file__).resolve().parents[1]
SWEEP = f"""
base = "{ROOT / "scenarios" / "cube-160.toml"}"
seeds = 2

[set]
"run.warmup_s" = 0.2
"run.duration_s" = 0.3

[grid]
"server.strategy" = ["sequential", "bsp-group"]

[zip]
"players.count" = [40, 80]
"machine.cpus" = [2, 4]
"""
NONDETERMINISTIC = list(VOLATILE)


def _write(tmp_path: Path, text: str = SWEEP) -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(text)
    return path


def _rows(table: pd.DataFrame) -> pd.DataFrame:
    return table.drop(columns=NONDETERMINISTIC).reset_index(drop=True)


def test_a_sweep_is_the_grid_times_the_zipped_lists_times_the_seeds(tmp_path):
    sweep = load_sweep(_write(tmp_path))
    assert sweep.varied == ("server.strategy", "players.count", "machine.cpus")
    assert len(sweep.runs) == 2 * 2 * 2
    points = [dict(r.params) for r in sweep.runs[::2]]
    assert points == [
        {"server.strategy": s, "players.count": n, "machine.cpus": c}
        for s in ("sequential", "bsp-group")
        for n, c in ((40, 2), (80, 4))
    ]
    first, second = sweep.runs[0], sweep.runs[1]
    assert (first.seed_index, second.seed_index) == (0, 1)
    assert second.seed == first.seed + 1 == second.scenario.run.seed
    last = sweep.runs[-1].scenario
    assert (last.server.strategy, last.players.count, last.machine.cpus) == ("bsp-group", 80, 4)
    assert last.run.duration_s == 0.3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('"machine.cpus" = [2, 4]', '"machine.cpus" = [2]'), "sweep.zip.0: lists varied"),
        (("seeds = 2", "seeds = 0"), "sweep.seeds: Input should be greater than or equal to 1"),
        (("seeds = 2", "seeds = 2\ncolour = 1"), "sweep.colour: unknown field; allowed"),
        (('"run.duration_s" = 0.3', '"players.count" = 5'), "sweep: players.count is given twice"),
        (("[2, 4]", "[2, 0]"), "machine.cpus: "),
        (("cube-160.toml", "nope.toml"), "sweep.base: scenario file not found"),
        (('"bsp-group"]', '"sequential"]'), "sweep.grid.server.strategy: a point is listed twice"),
        (
            ('"machine.cpus" = [2, 4]\n', '"machine.cpus" = [2, 4]\n"machine.platform" = []\n'),
            "sweep.zip.0: lists varied together",
        ),
    ],
)
def test_a_bad_sweep_file_is_a_one_line_error(tmp_path, change, message):
    with pytest.raises(InputError) as caught:
        load_sweep(_write(tmp_path, SWEEP.replace(*change)))
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def _refusal(tmp_path: Path, text: str) -> str:
    """The one-line error of loading ``text``; loading must not take long."""
    started = time.perf_counter()
    with pytest.raises(InputError) as caught:
        load_sweep(_write(tmp_path, text))
    assert time.perf_counter() - started < 5
    assert "\n" not in str(caught.value)
    return str(caught.value)


def test_seeds_are_bounded(tmp_path):
    """Failure 9 (issue 42): ``seeds = 9223372036854775808`` hung while loading."""
    error = _refusal(tmp_path, SWEEP.replace("seeds = 2", "seeds = 9223372036854775808"))
    assert error == "sweep.seeds: Input should be less than or equal to 10000, got " + str(2**63)


def test_the_number_of_runs_is_bounded_before_any_is_built(tmp_path):
    """2 strategies x 25 zipped points x 2,001 seeds: each bound met, 100,050 runs in all."""
    text = SWEEP.replace("seeds = 2", "seeds = 2001").replace('"run.warmup_s" = 0.2\n', "")
    text = text.replace("[40, 80]", str(list(range(1, 26))))
    text = text.replace('"machine.cpus" = [2, 4]', f'"run.warmup_s" = {[0.2] * 25}')
    assert _refusal(tmp_path, text) == (
        "sweep: 50 points x 2,001 seeds = 100,050 runs; at most 100,000 runs per sweep file "
        "(split it into several)"
    )


def _grid(line: str) -> str:
    """The sweep with one strategy and ``line`` as its grid's second key (no zip)."""
    text = SWEEP.replace('[zip]\n"players.count" = [40, 80]\n"machine.cpus" = [2, 4]\n', "")
    strategies = '"server.strategy" = ["sequential", "bsp-group"]\n'
    return text.replace(strategies, f'"server.strategy" = ["sequential"]\n{line}\n')


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        (
            '"clients.jitter_s" = [0, 0.0]',
            "sweep.grid.clients.jitter_s: clients.jitter_s = 0.0 is the same as clients.jitter_s "
            "= 0 once validated (one run listed twice); list each value once (repetitions are "
            "seeds)",
        ),
        (
            '"machine.cpus" = [2, 2.0]',  # a float is no CPU count
            "machine.cpus: must be a whole number, not a float, got 2.0",
        ),
        (
            '"run.seed" = [1, 2]',  # seeds = 2: the first point's seed 2 is the second's
            'sweep.seeds: point server.strategy="sequential" run.seed=2 seed 2 is the run of '
            'point server.strategy="sequential" run.seed=1 seed 2',
        ),
    ],
)
def test_one_run_listed_twice_is_refused_once_validated(tmp_path, capsys, grid, message):
    """``"clients.jitter_s" = [0, 0.0]`` would store one row for two runs and the summary count
    it twice (n = 2 over 2 seeds); ``2.0`` CPUs is refused outright."""
    path = _write(tmp_path, _grid(grid))
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"simsrv: error: {message}") and err.count("\n") == 1
    assert not (out / "runs").exists()


@pytest.mark.parametrize(
    ("bounds", "message"),
    [
        ("start = 32\nmax = 8", "sweep.capacity.start: must be <= max (8), got 32"),
        ("step = 0", "sweep.capacity.step: Input should be greater than or equal to 1, got 0"),
    ],
)
def test_capacity_bounds_follow_the_command_lines_rule(tmp_path, capsys, bounds, message):
    """Failure 11 (issue 42): ``[capacity] start = 32, max = 8`` ran and reported 0 clients
    (exit 0) where ``simsrv capacity --start 32 --max 8`` is refused."""
    path = _write(tmp_path, f"{SWEEP}\n[capacity]\n{bounds}\n")
    out = tmp_path / "out"
    assert main(["capacity", "--sweep", str(path), "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"simsrv: error: {message}\n"
    assert not out.exists() or not any(out.iterdir())
    assert main(["capacity", "--start", "32", "--max", "8"]) == 2
    assert capsys.readouterr().err == "simsrv: error: --start: must be <= --max (8), got 32\n"


def test_a_zipped_point_listed_twice_is_an_error(tmp_path):
    text = SWEEP.replace("[40, 80]", "[40, 40]").replace("[2, 4]", "[2, 2]")
    with pytest.raises(InputError, match=r"^sweep.zip \(players.count, machine.cpus\): a point"):
        load_sweep(_write(tmp_path, text))


def test_the_command_stores_one_row_per_run_and_a_summary(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["sweep", str(_write(tmp_path)), "--out", str(out), "--workers", "2"]) == 0
    table = pd.read_parquet(out / "runs")
    assert len(table) == 8 and table["error"].isna().all()
    for column in ("server.strategy", "players.count", "machine.cpus", "seed", "frames_per_s"):
        assert column in table
    assert {"simsrv_version", "scenario_hash", "wall_time_s"} <= set(table)
    summary = pd.read_csv(out / "summary.csv")
    fps = summary[summary["metric"] == "frames_per_s"]
    assert len(fps) == 4 and (fps["n"] == 2).all()
    printed = capsys.readouterr()
    assert "server.strategy" in printed.out and f"report: {out / 'report.html'}" in printed.err
    page = (out / "report.html").read_text(encoding="utf-8")
    assert html.escape(printed.out.splitlines()[2]) in page  # the table's first point
    assert html.escape(SWEEP.splitlines()[0]) in page  # the sweep file, then its scenario
    assert "<img" not in page and "8 stored of 8, 0 failed" in page
    # a second run finds everything stored and runs nothing
    assert main(["sweep", str(_write(tmp_path)), "--out", str(out)]) == 0
    assert "8 already stored" in capsys.readouterr().err


def test_a_resumed_sweep_gives_exactly_the_rows_of_an_uninterrupted_one(tmp_path):
    sweep = load_sweep(_write(tmp_path))
    whole = SweepStore(tmp_path / "whole")
    run_sweep(sweep, whole)
    parts = SweepStore(tmp_path / "parts")
    finished = []

    def stop_after_three(run, row):
        finished.append(run)
        if len(finished) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(sweep, parts, on_done=stop_after_three)
    assert len(pending(sweep, parts)) == len(sweep.runs) - 3
    (parts.runs_dir / ".run-half-written.parquet.123.tmp").write_bytes(b"PAR1 garbage")
    ran = run_sweep(sweep, parts)
    assert len(ran) == len(sweep.runs) - 3
    pd.testing.assert_frame_equal(_rows(parts.table(sweep)), _rows(whole.table(sweep)))


def test_kill_9_loses_only_the_runs_in_flight(tmp_path):
    path = _write(tmp_path, SWEEP.replace('"run.duration_s" = 0.3', '"run.duration_s" = 1.0'))
    out = tmp_path / "out"
    command = [sys.executable, "-m", "simsrv", "sweep", str(path), "--out", str(out)]
    proc = subprocess.Popen([*command, "--workers", "1"], stderr=subprocess.PIPE, text=True)
    deadline, finished = time.monotonic() + 120, 0
    while finished < 3 and time.monotonic() < deadline:
        finished += proc.stderr.readline().rstrip().endswith(" ok")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    stored = list((out / "runs").glob("run-*.parquet"))
    assert 3 <= len(stored) < 8  # whole files only: each one reads
    assert all(len(pd.read_parquet(p)) == 1 for p in stored)
    assert main(["sweep", str(path), "--out", str(out), "--workers", "2"]) == 0
    sweep = load_sweep(path)
    uninterrupted = SweepStore(tmp_path / "whole")
    run_sweep(sweep, uninterrupted, workers=2)
    resumed = SweepStore(out).table(sweep)
    pd.testing.assert_frame_equal(_rows(resumed), _rows(uninterrupted.table(sweep)))


def test_a_resumed_sweep_moves_a_damaged_part_aside_and_runs_its_runs_again(tmp_path, capsys):
    """Failure 16 (issue 42), the issue's repro: after ``truncate -s -7`` of the sweep's
    part, every resume exited 1 with a pyarrow traceback until the file was deleted by hand.
    The resume says so in one line, moves the file to OUT/damaged/, runs its runs again and
    stores exactly the rows of an uninterrupted sweep."""
    path, out = _write(tmp_path), tmp_path / "out"
    assert main(["sweep", str(path), "--out", str(out), "--workers", "2"]) == 0
    sweep = load_sweep(path)
    before = SweepStore(out).table(sweep)
    [part] = (out / "runs").glob("part-*.parquet")
    part.write_bytes(part.read_bytes()[:-7])
    capsys.readouterr()
    assert main(["sweep", str(path), "--out", str(out), "--workers", "2"]) == 0
    err = capsys.readouterr().err
    [moved] = (out / "damaged").glob(f"*/{part.name}")
    assert [line for line in err.splitlines() if "damaged" in line] == [
        f"simsrv: warning: damaged store file in {out / 'runs'} moved to {moved.parent}: "
        f"{part.name} (its bytes differ from the checksum it was written with); the runs it "
        "held are no longer stored (the sweep runs them again)"
    ]
    assert f"8 runs, 0 already stored in {out}; running 8" in err and "Traceback" not in err
    pd.testing.assert_frame_equal(_rows(SweepStore(out).table(sweep)), _rows(before))


def test_bad_sweep_flags_are_one_line_errors(tmp_path, capsys):
    path = str(_write(tmp_path))
    assert main(["sweep", path, "--backend", "ray"]) == 2
    assert "--backend: unknown backend 'ray'; allowed: local, dask" in capsys.readouterr().err
    assert main(["sweep", path, "--backend", "dask"]) == 2
    assert "--scheduler: required with --backend dask" in capsys.readouterr().err
    assert main(["sweep", str(tmp_path / "missing.toml")]) == 2
    assert "SWEEP.toml: file not found" in capsys.readouterr().err


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as local:
        yield local


def test_dask_gives_the_rows_of_the_local_backend(tmp_path, cluster):
    sweep = load_sweep(_write(tmp_path))
    local, remote = SweepStore(tmp_path / "local"), SweepStore(tmp_path / "dask")
    run_sweep(sweep, local, workers=2)
    run_sweep(sweep, remote, backend="dask", scheduler=cluster.scheduler_address)
    pd.testing.assert_frame_equal(_rows(remote.table(sweep)), _rows(local.table(sweep)))


def test_a_killed_dask_worker_loses_no_run(tmp_path, cluster):
    import os

    from dask.distributed import Client

    path = _write(tmp_path, SWEEP.replace('"run.duration_s" = 0.3', '"run.duration_s" = 1.0'))
    sweep = load_sweep(path)
    store = SweepStore(tmp_path / "dask")
    with Client(cluster.scheduler_address) as client:
        pids = client.run(os.getpid)
    killed = []

    def kill_a_worker_once(run, row):
        if not killed:
            victim = next(iter(pids.values()))
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    run_sweep(
        sweep,
        store,
        backend="dask",
        scheduler=cluster.scheduler_address,
        on_done=kill_a_worker_once,
    )
    assert killed
    table = store.table(sweep)
    assert len(table) == len(sweep.runs) and table["error"].isna().all()
    local = SweepStore(tmp_path / "local")
    run_sweep(sweep, local, workers=2)
    pd.testing.assert_frame_equal(_rows(table), _rows(local.table(sweep)))


def _children(pid: int) -> set[int]:
    """The child processes of ``pid`` (Linux /proc)."""
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        out |= {int(c) for c in task.read_text().split()}
    return out


def _running_pool(proc: subprocess.Popen) -> set[int]:
    """The pids of ``proc``'s two pool workers, once they are running simulations."""
    deadline = time.monotonic() + 60
    workers: set[int] = set()
    while len(workers) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
        workers = _children(proc.pid)
    assert len(workers) >= 2, "the pool did not start"
    time.sleep(1.0)  # the workers are running simulations
    return workers


def _alive(pid: int) -> bool:
    """A process that exists and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_kill_9_on_a_sweep_ends_its_pool_workers(tmp_path):
    """Failure 8 (issue 26): ``kill -9`` on ``simsrv sweep`` left its workers alive."""
    slow = SWEEP.replace('"run.duration_s" = 0.3', '"run.duration_s" = 30')
    command = [sys.executable, "-m", "simsrv", "sweep", str(_write(tmp_path, slow))]
    proc = subprocess.Popen(
        [*command, "--out", str(tmp_path / "out"), "--workers", "2"],
        stderr=subprocess.DEVNULL,
    )
    workers: set[int] = set()
    try:
        workers = _running_pool(proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(w) for w in workers)
    finally:
        proc.kill()
        for worker in workers:
            if _alive(worker):
                os.kill(worker, signal.SIGKILL)


def _start_sweep(path: Path, out: Path, workers: int) -> subprocess.Popen:
    """``simsrv sweep`` in a subprocess, returned once it holds the lock on ``out`` (it has
    said how many runs it will run)."""
    command = [sys.executable, "-m", "simsrv", "sweep", str(path), "--out", str(out)]
    proc = subprocess.Popen(
        [*command, "--workers", str(workers)], stderr=subprocess.PIPE, text=True
    )
    line = proc.stderr.readline()
    assert " already stored in " in line, line
    return proc


def test_a_second_writer_of_an_out_directory_is_refused_naming_the_first(tmp_path, capsys):
    """Failure 17 (issue 42): two sweeps on one --out both ran (32 rows for 16 runs), or the
    second died with a FileNotFoundError traceback.  While one command writes a directory,
    every other command that would write it is refused (one line naming the first one's pid,
    exit 2); once the first ends, even by kill -9, the next one runs."""
    path = _write(tmp_path, SWEEP.replace('"run.duration_s" = 0.3', '"run.duration_s" = 1.0'))
    out = tmp_path / "out"
    first = _start_sweep(path, out, workers=1)
    try:
        held = f"{out} is in use by another simsrv process (pid {first.pid}, simsrv sweep)"
        assert main(["sweep", str(path), "--out", str(out)]) == 2
        assert capsys.readouterr().err == (
            f"simsrv: error: --out: {held}; wait for it to end or give another --out\n"
        )
        capacity = tmp_path / "capacity.toml"
        capacity.write_text(f"{SWEEP}\n[capacity]\nstart = 8\nmax = 8\n")
        assert main(["capacity", "--sweep", str(capacity), "--out", str(out)]) == 2
        assert held in capsys.readouterr().err
        assert main(["compare", "--seeds", "1", "--out", str(out)]) == 2
        assert held in capsys.readouterr().err
    finally:
        first.kill()
        first.wait(timeout=30)
    assert main(["sweep", str(path), "--out", str(out), "--workers", "2"]) == 0
    table = pd.read_parquet(out / "runs")
    assert len(table) == 8 and table["scenario_hash"].is_unique


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_the_lock_dies_with_a_killed_sweep_and_its_workers(tmp_path):
    """Pool workers inherit the lock's descriptor when they fork; they close it, so a
    ``kill -9`` on the sweep frees its directory at once, whatever its workers are doing."""
    slow = SWEEP.replace('"run.duration_s" = 0.3', '"run.duration_s" = 30')
    out = tmp_path / "out"
    proc = _start_sweep(_write(tmp_path, slow), out, workers=2)
    workers: set[int] = set()
    try:
        workers = _running_pool(proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        with out_lock.hold(out, "--out", "the next sweep"):
            pass
    finally:
        proc.kill()
        for worker in workers:
            if _alive(worker):
                os.kill(worker, signal.SIGKILL)
