"""The model against a measured campaign: the validation table "real server on this machine".

For every stored condition (its repeats pooled: :func:`simsrv.testbed.campaign.pool_repeats`),
the model runs the same scenario (:mod:`simsrv.testbed.model`) over ``seeds`` seeds on
``platform``; each quantity of :data:`simsrv.testbed.model.QUANTITIES` gets the measured mean
and spread (half the repeats' range), the model's mean, the error (relative for rates, in
points for shares) and whether it is within tolerance: the quantity's own (+-10 %, +-5
points) or, where the repeats spread wider, the spread (a tolerance is never tighter than
the measurement's own noise).  Rows of ``calibration`` conditions say what the
fit was given; every other row is a prediction.  Each capacity search (most clients answered
at >= 95 %, under a CPU quota or not; repeated once per seed) is compared with the model's
capacity under the same quota, rate and client steps: within tolerance when it lies within
one step of the measured repeats' range.  Writes ``validation.parquet``, ``validation.md``,
``model-runs.parquet`` and ``testbed-vs-model.png`` into ``out``.
"""

from __future__ import annotations

import contextlib
import json
import signal
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simsrv.platforms.profile import load_platform
from simsrv.sweep.orphan import exit_with_parent
from simsrv.testbed.build import find_shared
from simsrv.testbed.campaign import condition_of, pool_repeats
from simsrv.testbed.model import (
    QUANTITIES,
    SCENARIO,
    config_from_row,
    judged,
    row_overrides,
    scenario_overrides,
    sends_file,
)
from simsrv.testbed.run import TestbedConfig
from simsrv.testbed.store import check_sends, read_capacity, read_runs, run_file
from simsrv.validation.jobs import RunJob, execute


def model_jobs(
    row: dict, shared, platform: str, seeds: int, store: Path | None = None
) -> list[RunJob]:
    """The model's runs of a stored condition, one per seed; with the campaign's ``store``,
    seed ``i`` replays repeat ``i``'s measured send times (:func:`row_overrides`)."""
    return [
        RunJob(
            str(SCENARIO),
            tuple(row_overrides(row, shared, seed=seed, platform=platform, store=store)),
        )
        for seed in range(1, seeds + 1)
    ]


def execute_all(
    jobs: list, workers: int, run: Callable[[Any], dict[str, float]] = execute
) -> list[dict[str, float]]:
    """Every job's quantities (``run`` of each: a :class:`RunJob`'s by default), in order: on
    a process pool of ``workers``, or here.  An exception, Ctrl-C included, stops the
    pool's workers at once, whatever they are running, and propagates; the workers leave
    SIGINT to this process (a terminal sends it to them too) and end with it
    (:func:`simsrv.sweep.orphan.exit_with_parent`)."""
    if workers <= 1 or len(jobs) <= 1:
        return [run(job) for job in jobs]
    pool = ProcessPoolExecutor(min(workers, len(jobs)), initializer=_pool_worker)
    try:
        futures = [pool.submit(run, job) for job in jobs]
        results = [future.result() for future in futures]
    except BaseException:
        _stop(pool)
        raise
    pool.shutdown(wait=True)
    return results


def _pool_worker() -> None:
    """A pool worker's start: it ends with this process and ignores Ctrl-C (its parent
    stops it)."""
    exit_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)


STOP_WAIT_S = 10.0
"""How long a stopped pool waits for each killed worker to be reaped, s."""


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started, kill the workers (their jobs are abandoned) and reap
    them, so that none outlives this process (the pool's ``_processes``, pid -> process, is
    read where it exists: Python has no public way to end the workers before 3.14)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        with contextlib.suppress(OSError, ValueError):
            process.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(OSError, ValueError, AssertionError):
            process.join(timeout=STOP_WAIT_S)


def run_model(
    rows: list[dict],
    shared,
    platform: str,
    seeds: int,
    workers: int,
    log: Callable[[str], None],
    store: Path | None = None,
) -> list[dict[str, float]]:
    """The model's mean quantities for each measured row (seed-averaged)."""
    jobs = [model_jobs(row, shared, platform, seeds, store) for row in rows]
    flat = [job for group in jobs for job in group]
    log(f"model: {len(flat)} runs ({len(rows)} conditions x {seeds} seeds)")
    results = execute_all(flat, workers)
    out, i = [], 0
    for group in jobs:
        chunk = results[i : i + len(group)]
        i += len(group)
        out.append({q: float(np.mean([r[q] for r in chunk])) for q in chunk[0]})
    return out


def compare_rows(measured: pd.DataFrame, model: list[dict[str, float]]) -> pd.DataFrame:
    """The tidy validation table: one row per (condition, quantity) of ``measured`` (pooled
    repeats; a table of single runs counts each as its own condition, spread 0)."""
    rows = []
    for (_, m), q in zip(measured.iterrows(), model, strict=True):
        saturated = not pd.isna(m.get("config.quota_us"))
        for c in QUANTITIES:
            if c.measured not in m or pd.isna(m[c.measured]) or c.model not in q:
                continue
            # (under a quota the model's busy time is CPU time, as the thread clock measures:
            # a throttled thread's time is no interval of the trace)
            real, sim = float(m[c.measured]), q[c.model]
            spread = float(m.get(f"spread.{c.measured}", 0.0) or 0.0)
            rows.append(
                {
                    "condition": m.get("condition", m["label"]),
                    "repeats": int(m.get("repeats", 1)),
                    "role": m["role"],
                    "question": m["question"],
                    "clients": int(m["config.clients"]),
                    "map": m["config.map"],
                    "phases": m["config.phases"],
                    "rate_hz": float(m["config.rate_hz"]),
                    "quota_share": float(m["quota_share"]) if saturated else float("nan"),
                    "quantity": c.label,
                    "measured": real,
                    "model": sim,
                    **judged(c, real, sim, spread),
                }
            )
    return pd.DataFrame(rows)


def model_capacity(
    base: TestbedConfig,
    clients: list[int],
    shared,
    platform: str,
    seeds: int,
    min_ratio: float,
    workers: int,
) -> int:
    """The model's capacity under the same quota and client steps (seed-mean reply ratio)."""
    capacity = 0
    for n in clients:
        config = replace(base, clients=n)
        jobs = [
            RunJob(
                str(SCENARIO), tuple(scenario_overrides(config, shared, seed=s, platform=platform))
            )
            for s in range(1, seeds + 1)
        ]
        results = execute_all(jobs, workers)
        if float(np.mean([r["reply_ratio"] for r in results])) < min_ratio:
            break
        capacity = n
    return capacity


def capacity_searches(stored: dict) -> list[dict]:
    """The searches of a stored ``capacity.json`` as :func:`~simsrv.testbed.store.read_capacity`
    reads it, grouped by name: each with its base config, grid, rule and the capacity every
    repeat measured."""
    grouped: dict[str, dict] = {}
    for search in stored["searches"]:
        entry = grouped.setdefault(
            search["name"],
            {
                "name": search["name"],
                "base": search["base"],
                "clients_grid": search["clients_grid"] or search["clients_tried"],
                "min_reply_ratio": search["min_reply_ratio"],
                "measured": [],
            },
        )
        entry["measured"].append(int(search["capacity_clients"]))
    return list(grouped.values())


def compare_capacities(
    stored: dict, shared, platform: str, seeds: int, workers: int, log: Callable[[str], None]
) -> list[dict]:
    """Each search's measured capacities against the model's (module docstring)."""
    out = []
    for search in capacity_searches(stored):
        base: TestbedConfig = search["base"]
        grid = search["clients_grid"]
        log(f"model: capacity search {search['name']}")
        model = model_capacity(
            base, grid, shared, platform, seeds, search["min_reply_ratio"], workers
        )
        step = grid[1] - grid[0] if len(grid) > 1 else 0
        measured = search["measured"]
        out.append(
            {
                "name": search["name"],
                "quota_share": None if base.quota_us is None else base.quota_us / base.period_us,
                "rate_hz": base.rate_hz,
                "measured": measured,
                "model": model,
                "step": step,
                "within": min(measured) - step <= model <= max(measured) + step,
            }
        )
    return out


def check_replays(rows: list[dict], store: Path, seeds: int) -> None:
    """Every stored ``sends.parquet`` the model's runs of ``rows`` will replay, checked
    before any runs (:func:`~simsrv.testbed.store.check_sends`; its checksum too)."""
    for row in rows:
        config = config_from_row(row)
        for path in dict.fromkeys(sends_file(store, row, seed) for seed in range(1, seeds + 1)):
            if path is not None:
                check_sends(run_file(store, path.parent.name, path.name), config)


def _capacity_label(capacity: dict) -> str:
    share = capacity["quota_share"]
    where = "without a quota" if share is None else f"at {share:.0%} of a CPU"
    return f"capacity {where}, {capacity['rate_hz']:g} Hz"


def markdown(table: pd.DataFrame, capacities: list[dict]) -> str:
    """The validation table as Markdown (errors in % for rates, in points for shares)."""
    lines = [
        "| condition | role | quantity | measured | model | error | tolerance | ok |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for _, r in table.iterrows():
        unit = "%" if r["relative"] else " pt"
        scale = 100.0
        looser = " (spread)" if r.get("tolerance_from_spread") else ""
        measured = f"{r['measured']:.3g}" if r["relative"] else f"{r['measured']:.1%}"
        if r.get("repeats", 1) > 1:
            spread = r["spread"] * (r["measured"] if r["relative"] else 1.0)
            measured += f" +- {spread:.2g}" if r["relative"] else f" +- {spread:.1%}"
        model = f"{r['model']:.3g}" if r["relative"] else f"{r['model']:.1%}"
        lines.append(
            f"| {r['condition']} | {r['role']} | {r['quantity']} | {measured} | "
            f"{model} | {r['error'] * scale:+.1f}{unit} | "
            f"+-{r['tolerance'] * scale:.0f}{unit}{looser} | "
            f"{'yes' if r['within'] else 'no'} |"
        )
    for capacity in capacities:
        low, high = min(capacity["measured"]), max(capacity["measured"])
        span = f"{low}" if low == high else f"{low}-{high}"
        model = capacity["model"]
        off = model - high if model > high else min(model - low, 0)  # from the measured range
        lines.append(
            f"| {_capacity_label(capacity)} | prediction | clients answered >= 95 % | {span} | "
            f"{model} | {off:+d} clients | +-{capacity['step']} clients | "
            f"{'yes' if capacity['within'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def summary_markdown(table: pd.DataFrame) -> str:
    """One line per condition: the rates and CPU busy (measured, model, error) and the worst
    stage share, with how many of its quantities are within tolerance."""
    lines = [
        "| condition | role | frames/s real / model | messages/frame real / model | "
        "server CPU real / model | replies/s error | worst share (pt) | within |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def pair(by: pd.DataFrame, q: str, fmt: str) -> str:
        r = by.loc[q]
        mark = "" if r["within"] else " **x**"
        return f"{format(r['measured'], fmt)} / {format(r['model'], fmt)} ({r['error']:+.0%}){mark}"

    for condition, rows in table.groupby("condition", sort=False):
        by = rows.set_index("quantity")
        shares = rows[~rows["relative"]]
        worst = shares.loc[shares["error"].abs().idxmax()]
        lines.append(
            f"| {condition} | {rows['role'].iloc[0]} | {pair(by, 'frames/s', '.0f')} | "
            f"{pair(by, 'messages/frame', '.2f')} | {pair(by, 'server CPU busy', '.1%')} | "
            f"{by.loc['replies/s', 'error']:+.0%} | {worst['quantity']} "
            f"{worst['error'] * 100:+.1f} | {int(rows['within'].sum())}/{len(rows)} |"
        )
    return "\n".join(lines) + "\n"


def compare_campaign(
    store: Path,
    out: Path,
    *,
    platform: str = "this-machine-mvdsv",
    seeds: int = 2,
    workers: int = 2,
    shared_root: Path | None = None,
    log: Callable[[str], None] = print,
) -> pd.DataFrame:
    """Run the model on every stored condition and write the comparison (module docstring)."""
    shared = find_shared(shared_root)
    measured_runs = read_runs(store, "testbed --compare")
    stored_capacity = read_capacity(store)
    load_platform(platform)
    measured = pool_repeats(measured_runs)
    rows = [r.to_dict() for _, r in measured.iterrows()]
    check_replays(rows, store, seeds)
    model = run_model(rows, shared, platform, seeds, workers, log, store)
    out.mkdir(parents=True, exist_ok=True)
    runs = measured[["condition", "label", "role", "question"]].copy()
    for key in (
        "frames_per_s",
        "messages_per_frame",
        "messages_per_s",
        "replies_per_s",
        "busy_fraction",
        "reply_ratio",
    ):
        runs[f"model.{key}"] = [q.get(key, float("nan")) for q in model]
    runs.to_parquet(out / "model-runs.parquet", index=False)
    table = compare_rows(measured, model)
    capacities: list[dict] = []
    if stored_capacity is not None:
        capacities = compare_capacities(stored_capacity, shared, platform, seeds, workers, log)
        (out / "capacity-compared.json").write_text(json.dumps(capacities, indent=2) + "\n")
    table.to_parquet(out / "validation.parquet", index=False)
    (out / "validation.md").write_text(markdown(table, capacities))
    (out / "validation-summary.md").write_text(summary_markdown(table))
    from simsrv.figures.testbed import testbed_figure

    measured_runs = measured_runs.assign(condition=measured_runs["label"].map(condition_of))
    figure = testbed_figure(measured_runs, runs)
    figure.savefig(out / "testbed-vs-model.png", dpi=110)
    return table
