"""The model against a measured campaign: the validation table "real server on this machine".

For every stored condition, the model runs the same scenario (:mod:`simsrv.testbed.model`)
over ``seeds`` seeds on ``platform``; each quantity of :data:`simsrv.testbed.model.QUANTITIES`
gets the measured value, the model's mean, the error (relative for rates, in points for
shares) and whether it is within tolerance.  Rows of ``calibration`` conditions say what the
fit was given; every other row is a prediction.  The capacity search (most clients answered
at >= 95 % under the campaign's CPU quota) is compared with the model's capacity under the
same quota and client steps.  Writes ``validation.parquet``, ``validation.md``,
``model-runs.parquet`` and ``testbed-vs-model.png`` into ``out``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from simsrv.testbed.build import find_shared
from simsrv.testbed.model import QUANTITIES, SCENARIO, row_overrides, scenario_overrides
from simsrv.testbed.run import TestbedConfig
from simsrv.validation.jobs import RunJob, execute

CAPACITY_TOLERANCE_CLIENTS = 4  # one step of the search


def model_jobs(row: dict, shared, platform: str, seeds: int) -> list[RunJob]:
    return [
        RunJob(str(SCENARIO), tuple(row_overrides(row, shared, seed=seed, platform=platform)))
        for seed in range(1, seeds + 1)
    ]


def execute_all(jobs: list[RunJob], workers: int) -> list[dict[str, float]]:
    """Every job's quantities, in order: on a process pool of ``workers``, or here."""
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            return list(pool.map(execute, jobs))
    return [execute(job) for job in jobs]


def run_model(
    rows: list[dict], shared, platform: str, seeds: int, workers: int, log: Callable[[str], None]
) -> list[dict[str, float]]:
    """The model's mean quantities for each measured row (seed-averaged)."""
    jobs = [model_jobs(row, shared, platform, seeds) for row in rows]
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
    """The tidy validation table: one row per (condition, quantity)."""
    rows = []
    for (_, m), q in zip(measured.iterrows(), model, strict=True):
        saturated = not pd.isna(m.get("config.quota_us"))
        for c in QUANTITIES:
            if c.measured not in m or pd.isna(m[c.measured]) or c.model not in q:
                continue
            # (under a quota the model's busy time is CPU time, as the thread clock measures:
            # a throttled thread's time is no interval of the trace)
            real, sim = float(m[c.measured]), q[c.model]
            error = (sim - real) / real if c.relative else sim - real
            if c.relative and real == 0:
                error = math.inf
            rows.append(
                {
                    "condition": m["label"],
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
                    "error": error,
                    "relative": c.relative,
                    "tolerance": c.tolerance,
                    "within": bool(abs(error) <= c.tolerance),
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


def markdown(table: pd.DataFrame, capacity: dict | None) -> str:
    """The validation table as Markdown (errors in % for rates, in points for shares)."""
    lines = [
        "| condition | role | quantity | measured | model | error | tolerance | ok |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for _, r in table.iterrows():
        unit = "%" if r["relative"] else " pt"
        scale = 100.0
        measured = f"{r['measured']:.3g}" if r["relative"] else f"{r['measured']:.1%}"
        model = f"{r['model']:.3g}" if r["relative"] else f"{r['model']:.1%}"
        lines.append(
            f"| {r['condition']} | {r['role']} | {r['quantity']} | {measured} | "
            f"{model} | {r['error'] * scale:+.1f}{unit} | "
            f"+-{r['tolerance'] * scale:.0f}{unit} | {'yes' if r['within'] else 'no'} |"
        )
    if capacity is not None:
        ok = abs(capacity["model"] - capacity["measured"]) <= CAPACITY_TOLERANCE_CLIENTS
        lines.append(
            f"| capacity at {capacity['quota_share']:.0%} of a CPU | prediction | "
            f"clients answered >= 95 % | {capacity['measured']} | {capacity['model']} |"
            f" {capacity['model'] - capacity['measured']:+d} clients | "
            f"+-{CAPACITY_TOLERANCE_CLIENTS} clients | {'yes' if ok else 'no'} |"
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
    measured = pd.read_parquet(store / "runs.parquet")
    rows = [r.to_dict() for _, r in measured.iterrows()]
    model = run_model(rows, shared, platform, seeds, workers, log)
    out.mkdir(parents=True, exist_ok=True)
    runs = measured[["label", "role", "question"]].copy()
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
    capacity = None
    capacity_file = store / "capacity.json"
    if capacity_file.is_file():
        stored = json.loads(capacity_file.read_text())
        base = TestbedConfig(**stored["base"])
        log("model: capacity search")
        grid = stored.get("clients_grid") or stored["clients_tried"]
        capacity = {
            "measured": int(stored["capacity_clients"]),
            "model": model_capacity(
                base, grid, shared, platform, seeds, stored["min_reply_ratio"], workers
            ),
            "quota_share": base.quota_us / base.period_us,
        }
        (out / "capacity-compared.json").write_text(json.dumps(capacity, indent=2) + "\n")
    table.to_parquet(out / "validation.parquet", index=False)
    (out / "validation.md").write_text(markdown(table, capacity))
    (out / "validation-summary.md").write_text(summary_markdown(table))
    from simsrv.figures.testbed import testbed_figure

    figure = testbed_figure(measured, runs)
    figure.savefig(out / "testbed-vs-model.png", dpi=110)
    return table
