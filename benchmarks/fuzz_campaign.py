"""simsrv's long fuzz campaign: many hostile inputs, every promise checked.

    python benchmarks/fuzz_campaign.py --cases 10000 [--workers 2] [--seed 1] [--out DIR]
        [--families scenario,text,bsp,sweep,argv,api,store,testbed,campaign,stored]

Each worker process draws cases from :func:`tests.input_fuzz.cases` (hypothesis, its own seed)
and judges each with :func:`tests.input_fuzz.verdict`, writing one JSON line per case.  The
parent is the watchdog: a worker silent for longer than a case's budget plus
:data:`HANG_GRACE_S` (a run that ignored the simulated Ctrl-C) is killed, the case it was on is
recorded as a ``hang``, and a fresh worker carries on with the next seed.  The result,
``OUT/campaign.json`` (cases, seconds, outcomes per family, every failure with its case), is
what ``docs/robustness.md`` quotes.  Killing the campaign kills its workers (they die with
their parent); the lines written so far stay in ``OUT/cases-*.jsonl``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HANG_GRACE_S = 60.0
"""Seconds past a case's budget (its simulated Ctrl-C) before its worker counts as hung."""


def worker(seed: int, count: int, families: list[str], budget_s: float) -> None:
    """Judge ``count`` cases drawn with ``seed``; one JSON line per case on stdout, and a
    ``start`` line before each (so that the watchdog knows which case hung)."""
    import ctypes
    import signal

    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    from tests.input_fuzz import cases, verdict

    with contextlib.suppress(OSError):  # die with the campaign (Linux)
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)
    out = sys.__stdout__
    done = [0]

    @hypothesis_seed(seed)
    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(cases(families))
    def judge(case):
        if done[0] >= count:
            return
        print(json.dumps({"start": done[0], "case": case.describe()}), file=out, flush=True)
        result = verdict(case, budget_s)
        done[0] += 1
        line = {
            "family": case.family,
            "outcome": result.outcome,
            "seconds": round(result.seconds, 3),
            "failed": result.failed,
        }
        if result.failed:
            line |= {"detail": result.detail, "case": case.describe()}
        print(json.dumps(line), file=out, flush=True)

    judge()


def campaign(cases: int, workers: int, seed: int, families: list[str], out: Path, budget_s: float):
    """Run the campaign; returns its summary (also written to ``out/campaign.json``)."""
    out.mkdir(parents=True, exist_ok=True)
    per_worker = [cases // workers + (i < cases % workers) for i in range(workers)]
    start = time.perf_counter()
    results: list[dict] = []
    running: dict[int, dict] = {}
    next_seed = seed

    def launch(slot: int, count: int) -> None:
        nonlocal next_seed
        command = [
            sys.executable,
            __file__,
            "--worker",
            str(next_seed),
            str(count),
            ",".join(families),
            str(budget_s),
        ]
        log = open(out / f"cases-{next_seed}.jsonl", "w")  # noqa: SIM115 - closed on exit
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            cwd=ROOT,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        running[slot] = {
            "process": process,
            "left": count,
            "log": log,
            "current": None,
            "since": time.monotonic(),
            "buffer": "",
        }
        next_seed += 1

    for slot, count in enumerate(per_worker):
        if count:
            launch(slot, count)
    while running:
        streams = {w["process"].stdout.fileno(): slot for slot, w in running.items()}
        ready, _, _ = select.select(list(streams), [], [], 5.0)
        for fd in ready:
            slot = streams[fd]
            state = running[slot]
            line = state["process"].stdout.readline()
            if not line:  # the worker ended
                state["process"].wait()
                state["log"].close()
                left = state["left"]
                del running[slot]
                if left > 0:  # it died early: carry on with a new seed
                    results.append(
                        {
                            "family": "?",
                            "outcome": "worker-died",
                            "failed": True,
                            "case": state["current"],
                            "seconds": 0.0,
                        }
                    )
                    launch(slot, left - 1)
                continue
            state["log"].write(line)
            record = json.loads(line)
            state["since"] = time.monotonic()
            if "start" in record:
                state["current"] = record["case"]
                continue
            results.append(record)
            state["left"] -= 1
        for slot, state in list(running.items()):
            if time.monotonic() - state["since"] > budget_s + HANG_GRACE_S:
                state["process"].kill()
                state["process"].wait()
                state["log"].close()
                results.append(
                    {
                        "family": json.loads(state["current"] or "{}").get("family", "?"),
                        "outcome": "hang",
                        "failed": True,
                        "case": state["current"],
                        "seconds": budget_s + HANG_GRACE_S,
                    }
                )
                left = state["left"] - 1
                del running[slot]
                if left > 0:
                    launch(slot, left)
        done = len(results)
        print(
            f"\r{done}/{cases} cases, {sum(r['failed'] for r in results)} failures, "
            f"{time.perf_counter() - start:.0f} s",
            end="",
            file=sys.stderr,
            flush=True,
        )
    print(file=sys.stderr)
    summary = summarise(results, time.perf_counter() - start, seed, workers, families)
    (out / "campaign.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def summarise(results, seconds, seed, workers, families) -> dict:
    by_family: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    slowest_refusal = 0.0
    for r in results:
        by_family[r["family"]][r["outcome"]] += 1
        if r["outcome"] == "refused":
            slowest_refusal = max(slowest_refusal, r["seconds"])
    return {
        "cases": len(results),
        "seconds": round(seconds, 1),
        "seed": seed,
        "workers": workers,
        "families": families,
        "failures": sum(r["failed"] for r in results),
        "slowest_refusal_s": round(slowest_refusal, 2),
        "outcomes": {family: dict(counts) for family, counts in sorted(by_family.items())},
        "failed_cases": [r for r in results if r["failed"]],
    }


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _, _, seed, count, families, budget = sys.argv
        sys.path.insert(0, str(ROOT))
        worker(int(seed), int(count), families.split(","), float(budget))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--budget-s", type=float, default=30.0, help="simulated Ctrl-C after")
    parser.add_argument("--families", default=None, help="comma-separated (default: all)")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "fuzz")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.input_fuzz import FAMILIES

    families = args.families.split(",") if args.families else list(FAMILIES)
    summary = campaign(args.cases, args.workers, args.seed, families, args.out, args.budget_s)
    print(json.dumps({k: v for k, v in summary.items() if k != "failed_cases"}, indent=2))
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
