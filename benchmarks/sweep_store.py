"""Speed of the sweep store (``simsrv.sweep.store``) at 1,000 and 10,000 runs.

    python benchmarks/sweep_store.py                        # N = 1,000 and 10,000, 3 reps each
    python benchmarks/sweep_store.py --sizes 1000 --repeats 5 --json store.json

No simulation runs: the sweep's runs are real scenarios (``scenarios/cube-160.toml`` with
``run.seed`` = 1 .. N, so every run has its own hash) and each run's row is synthetic, with the
columns and types of a real ``simsrv sweep`` row (1 % of them failed: an ``error`` and NaN
metrics).  For each N, three timings, each a median over ``--repeats`` repetitions:

``write``
    :func:`simsrv.sweep.sweep.run_sweep` on one worker with the simulation replaced by the
    synthetic row: storing N rows one by one as a sweep does (and whatever else the store does
    while a sweep runs, e.g. compaction), into a fresh directory each repetition.  The
    ``(compact)`` column is the part of it spent in ``SweepStore.compact`` (0 for a store
    without one).
``done``
    :func:`simsrv.sweep.sweep.pending` (``store.done`` for every run) on a new ``SweepStore``
    of the full store: what a resumed sweep does before it starts.
``table``
    ``store.table(sweep)`` on a new ``SweepStore``: what ``simsrv sweep`` does to summarise.

To measure another checkout (e.g. the code before a change), put it first on the path:
``git archive HEAD | tar -x -C /tmp/head && PYTHONPATH=/tmp/head python
benchmarks/sweep_store.py`` (the first line printed says which simsrv ran).

The files are in a temporary directory on the machine's disk; the OS page cache is warm (the
store was just written), so the timings are CPU and system-call time, not disk reads.
Results are recorded in ``docs/performance.md`` ("Sweep store").
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import simsrv
import simsrv.sweep.sweep as sweep_module
from simsrv.pipeline.load import load_scenario
from simsrv.sweep.records import METRICS, scenario_hash
from simsrv.sweep.spec import Sweep, SweepRun
from simsrv.sweep.store import SweepStore
from simsrv.version import __version__

ROOT = Path(__file__).resolve().parents[1]
FAILED_EVERY = 100
"""One run in this many has a failed row."""


def make_sweep(n: int, out: Path) -> Sweep:
    """A sweep of ``n`` runs: one point (``server.strategy``) and ``n`` seeds."""
    base = load_scenario(str(ROOT / "scenarios" / "cube-160.toml"))
    params = (("server.strategy", base.server.strategy),)
    runs = []
    for i in range(n):
        seed = 1 + i
        scenario = base.model_copy(update={"run": base.run.model_copy(update={"seed": seed})})
        runs.append(SweepRun(params, i, seed, scenario))
    return Sweep(out / "sweep.toml", ROOT, ("server.strategy",), tuple(runs), out)


def synthetic_row(run: SweepRun) -> dict:
    """A row with the columns and types of :func:`simsrv.sweep.sweep.sweep_row`'s."""
    sc, i = run.scenario, run.seed_index
    failed = i % FAILED_EVERY == FAILED_EVERY - 1
    value = math.nan if failed else 1.0 + (i % 97) / 97
    row = {
        **run.columns(),
        "map": sc.map.kind,
        "platform": sc.machine.platform,
        "offered_per_s": sc.players.count * sc.clients.rate_hz,
        **{m: value for m in METRICS},
        "os_time_fraction": value,
        "cpu_utilization_mean": value,
        "groups_per_frame": value,
        "group_size_mean": value,
        "frames": math.nan if failed else 1000 + i % 13,
        "simulated_time_s": sc.run.duration_s,
        "wall_time_s": math.nan if failed else 0.5 + i % 7,
        "error": "RuntimeError: synthetic failure at bench.py:1" if failed else None,
        "simsrv_version": __version__,
        "scenario_hash": scenario_hash(sc),
    }
    return row


def timed(function, *args, **kwargs):
    """(wall seconds, result) of ``function(*args, **kwargs)``."""
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - start, result


def measure(n: int, repeats: int, work: Path) -> dict[str, list[float]]:
    """Wall seconds of each step, one entry per repetition."""
    sweep = make_sweep(n, work)
    rows = {id(r): synthetic_row(r) for r in sweep.runs}
    real_row, real_compact = sweep_module.sweep_row, getattr(SweepStore, "compact", None)
    sweep_module.sweep_row = lambda run: rows[id(run)]
    compacting = [0.0]

    def compact(store: SweepStore) -> None:
        seconds, _ = timed(real_compact, store)
        compacting[0] += seconds

    if real_compact is not None:  # a store that compacts: how much of `write` that takes
        SweepStore.compact = compact
    times: dict[str, list[float]] = {"write": [], "compact": [], "done": [], "table": []}
    try:
        for rep in range(repeats):
            out = work / f"n{n}-rep{rep}"
            compacting[0] = 0.0
            seconds, _ = timed(sweep_module.run_sweep, sweep, SweepStore(out), todo=sweep.runs)
            times["write"].append(seconds)
            times["compact"].append(compacting[0])
            seconds, failed = timed(sweep_module.pending, sweep, SweepStore(out))
            times["done"].append(seconds)
            seconds, table = timed(SweepStore(out).table, sweep)
            times["table"].append(seconds)
            assert len(table) == n, (len(table), n)
            assert len(failed) == n // FAILED_EVERY, len(failed)
            assert table["error"].notna().sum() == len(failed)
            shutil.rmtree(out)
    finally:
        sweep_module.sweep_row = real_row
        if real_compact is not None:
            SweepStore.compact = real_compact
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="runs per sweep, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--dir", type=Path, default=None, help="work directory (default: tmp)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "simsrv": str(Path(simsrv.__file__).parent),
        "repeats": args.repeats,
        "sizes": {},
    }
    print(f"simsrv from {results['simsrv']}")
    print(
        f"{'runs':>7} {'write s':>9} {'(compact)':>10} {'done s':>9} {'table s':>9}"
        f"   (median of {args.repeats})"
    )
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for n in sizes:
            times = measure(n, args.repeats, Path(tmp))
            medians = {k: statistics.median(v) for k, v in times.items()}
            results["sizes"][str(n)] = {"median_s": medians, "all_s": times}
            print(
                f"{n:>7} {medians['write']:>9.3f} {medians['compact']:>10.3f} "
                f"{medians['done']:>9.3f} {medians['table']:>9.3f}",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
