"""The primitive costs of this machine that a lock-based OpenMP server pays, measured.

``simsrv testbed --primitives`` compiles ``primitives/primitives.c`` (once per digest) and
runs it under each OpenMP wait policy of libgomp (``OMP_WAIT_POLICY=passive``: a waiting
thread sleeps in the kernel at once; ``active``: it spins).  Each quantity is a median over
many repetitions, in nanoseconds: an uncontended lock and nested-lock pair, a cache line
moving between the two CPUs, the hand-off of a contended lock (holder's release to the
waiter's return) after holds of 1 us to 1 ms, a parallel region waking its second thread
after the team was idle 0, 1 ms, 20 ms and 100 ms (QuakeTM's frame periods among them), one
task from a single producer (1 and 2 threads) and a barrier of two threads.

:func:`measure_primitives` returns a tidy table: one row per (quantity, policy, parameter).
These are the sources of the QuakeTM model's platform costs (docs/quaketm.md); each is
measured here, not fitted.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pandas as pd

from simsrv.testbed.loadgen import compile_once

SOURCE = Path(__file__).with_name("primitives") / "primitives.c"
POLICIES = ("passive", "active")
QUANTITIES = {
    "lock_uncontended_ns": "omp_set_lock + omp_unset_lock, one thread alone (ns)",
    "nest_lock_uncontended_ns": "the same with a nested lock (ns)",
    "cache_line_transfer_ns": "a line written by one CPU read by the other: half a ping-pong "
    "round trip (ns)",
    "lock_handoff_ns": "a contended lock's release to the waiter's return, after the holder "
    "held it `parameter` us (ns)",
    "fork_wake_ns": "a parallel region's start to its second thread's entry, the team idle "
    "`parameter` us before (ns)",
    "task_ns": "one task made by one producer and run, `parameter` threads (ns)",
    "barrier_ns": "one barrier of two threads (ns)",
}


def build_primitives() -> Path:
    """The compiled benchmark (gcc with OpenMP)."""
    return compile_once("primitives", SOURCE, ["-O2", "-fopenmp", "-Wall"], [])


def run_once(binary: Path, policy: str, cpus: tuple[int, int], timeout_s: float = 300.0) -> dict:
    """One run of the benchmark under ``policy``; its JSON object."""
    env = dict(os.environ, OMP_WAIT_POLICY=policy.upper(), OMP_PROC_BIND="false")
    out = subprocess.run(
        [str(binary), str(cpus[0]), str(cpus[1])],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=True,
    )
    return json.loads(out.stdout)


def tidy(results: dict[str, dict]) -> pd.DataFrame:
    """One row per (quantity, policy, parameter) from each policy's JSON object."""
    rows = []
    for policy, values in results.items():
        for key, value in values.items():
            if key in ("omp_wait_policy", "cpus"):
                continue
            quantity, _, parameter = key.partition(".")
            rows.append(
                {
                    "quantity": quantity,
                    "policy": policy,
                    "parameter": float(parameter) if parameter else float("nan"),
                    "value_ns": float(value),
                }
            )
    return pd.DataFrame(rows)


def measure_primitives(cpus: tuple[int, int] = (0, 1), repeats: int = 3) -> pd.DataFrame:
    """Every quantity under both wait policies, ``repeats`` runs each (``repeat`` column)."""
    binary = build_primitives()
    frames = []
    for repeat in range(repeats):
        for policy in POLICIES:
            table = tidy({policy: run_once(binary, policy, cpus)})
            frames.append(table.assign(repeat=repeat))
    return pd.concat(frames, ignore_index=True)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Median and half-range over the repeats of each (quantity, policy, parameter)."""
    keys = ["quantity", "policy", "parameter"]
    grouped = table.groupby(keys, dropna=False)["value_ns"]
    out = grouped.median().rename("median_ns").to_frame()
    out["spread_ns"] = (grouped.max() - grouped.min()) / 2
    out["repeats"] = grouped.size()
    return out.reset_index()
