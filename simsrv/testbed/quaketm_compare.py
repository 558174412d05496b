"""QuakeTM's model against its measured campaign: tables and the figure of docs/quaketm.md.

:func:`compare_quaketm` pools each condition's repeats (:func:`pool_repeats`), runs the
model on each (:func:`simsrv.testbed.quaketm_model.run_model`, the repeats' send times
replayed), and writes into ``out``: ``quaketm-validation.parquet`` (one row per condition and
quantity), ``quaketm-speedups.parquet`` (speedup from 1 to 2 and 4 threads, measured and
model), ``quaketm-validation.md`` (the tables) and ``quaketm-vs-model.png`` (speedup and
lock-wait share against threads and clients, real and model).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from simsrv.testbed.build import find_shared  # noqa: E402
from simsrv.testbed.campaign import pool_repeats  # noqa: E402
from simsrv.testbed.compare import check_replays  # noqa: E402
from simsrv.testbed.quaketm_model import compare_rows, run_model, speedups  # noqa: E402
from simsrv.testbed.store import read_runs  # noqa: E402


def compare_quaketm(
    store: Path,
    out: Path,
    *,
    seeds: int = 2,
    workers: int = 2,
    shared_root: Path | None = None,
    log: Callable[[str], None] = print,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The validation table and the speedup table (module docstring); both written."""
    shared = find_shared(shared_root)
    pooled = pool_repeats(read_runs(store, "testbed --compare"))
    rows = [r.to_dict() for _, r in pooled.iterrows()]
    check_replays(rows, store, seeds)
    model = run_model(rows, shared, seeds, workers, log, store)
    table = compare_rows(pooled, model)
    gains = speedups(table)
    out.mkdir(parents=True, exist_ok=True)
    table.to_parquet(out / "quaketm-validation.parquet", index=False)
    gains.to_parquet(out / "quaketm-speedups.parquet", index=False)
    (out / "quaketm-validation.md").write_text(markdown(table, gains))
    figure(table, gains).savefig(out / "quaketm-vs-model.png", dpi=110)
    plt.close("all")
    return table, gains


def _fmt(value: float, relative: bool) -> str:
    return f"{value:+.1%}" if relative else f"{value * 100:+.1f} pt"


def markdown(table: pd.DataFrame, gains: pd.DataFrame) -> str:
    """The tables of docs/quaketm.md: within tolerance per question and quantity, the
    speedups, and every condition's measured and model values."""
    lines = ["# QuakeTM: the model against the measured server", ""]
    predictions = table[table["role"] == "prediction"]
    lines += [
        "## Within tolerance",
        "",
        "| question | quantity | within | of |",
        "|---|---|---|---|",
    ]
    for (question, quantity), g in predictions.groupby(["question", "quantity"], sort=False):
        lines.append(f"| {question} | {quantity} | {int(g['within'].sum())} | {len(g)} |")
    calibration = table[table["role"] == "calibration"]
    lines += [
        "",
        f"Calibration conditions: {int(calibration['within'].sum())} of {len(calibration)} "
        "quantities within tolerance; predictions: "
        f"{int(predictions['within'].sum())} of {len(predictions)}.",
        "",
        "## Speedup from 1 thread",
        "",
        "| build | clients | map | phases | frame ms | wait | of | threads | measured | model | "
        "error | tolerance | within |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in gains.iterrows():
        lines.append(
            f"| {r['server']} | {r['clients']} | {r['map']} | {r['phases']} | "
            f"{r['frame_ms']:g} | {r['omp_wait']} | {r['of']} | {r['threads']} | "
            f"{r['measured']:.3f} | {r['model']:.3f} | {r['error']:+.1%} | "
            f"{r['tolerance']:.0%} | {'yes' if r['within'] else 'no'} |"
        )
    lines += [
        "",
        "## Every condition",
        "",
        "| condition | role | quantity | measured | spread | model | error | tolerance | within |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in table.iterrows():
        rel = bool(r["relative"])
        value = (lambda v: f"{v:.3g}") if rel else (lambda v: f"{v:.1%}")
        spread = f"{r['spread']:.1%}" if rel else f"{r['spread'] * 100:.1f} pt"
        lines.append(
            f"| {r['condition']} | {r['role']} | {r['quantity']} | {value(r['measured'])} | "
            f"{spread} | {value(r['model'])} | {_fmt(r['error'], rel)} | "
            f"{_fmt(r['tolerance'], rel)} | {'yes' if r['within'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


BUILDS = ("quaketm-global", "quaketm-coarse", "quaketm-fine")
COLOURS = {"quaketm-global": "tab:red", "quaketm-coarse": "tab:blue", "quaketm-fine": "tab:green"}


def figure(table: pd.DataFrame, gains: pd.DataFrame) -> plt.Figure:
    """Speedup of the frame (left) and lock-wait share of the request stage (right) against
    the clients, per build and thread count, real (solid, with the repeats' spread) and model
    (dashed): dm1, independent phases, 100 ms frames, sleeping waiters."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    base = (gains["map"] == "dm1") & (gains["phases"] == "independent")
    base &= (gains["frame_ms"] == 100) & (gains["omp_wait"] == "passive") & (gains["of"] == "frame")
    for build in BUILDS:
        for threads, marker in ((2, "o"), (4, "s")):
            g = gains[base & (gains["server"] == build) & (gains["threads"] == threads)]
            g = g.sort_values("clients")
            if g.empty:
                continue
            label = f"{build.removeprefix('quaketm-')} {threads}T"
            left.plot(g["clients"], g["measured"], marker=marker, color=COLOURS[build], label=label)
            left.plot(g["clients"], g["model"], marker=marker, color=COLOURS[build], ls="--",
                      mfc="none")  # fmt: skip
    left.axhline(1.0, color="grey", lw=0.8)
    left.set(xlabel="clients", ylabel="frame speedup over 1 thread",
             title="Speedup (real solid, model dashed)")  # fmt: skip
    left.legend(fontsize=7, ncol=2)
    waits = table[
        (table["quantity"] == "lock-wait share")
        & (table["map"] == "dm1")
        & (table["phases"] == "independent")
        & (table["frame_ms"] == 100)
        & (table["omp_wait"] == "passive")
        & (table["server_cpu"] == "all")
        & ~table["bind"]
    ]
    for build in BUILDS:
        for threads, marker in ((2, "o"), (4, "s")):
            g = waits[(waits["server"] == build) & (waits["threads"] == threads)]
            g = g.sort_values("clients")
            if g.empty:
                continue
            label = f"{build.removeprefix('quaketm-')} {threads}T"
            right.errorbar(g["clients"], g["measured"] * 100, yerr=g["spread"] * 100,
                           marker=marker, color=COLOURS[build], label=label, capsize=2)  # fmt: skip
            right.plot(g["clients"], g["model"] * 100, marker=marker, color=COLOURS[build],
                       ls="--", mfc="none")  # fmt: skip
    right.set(xlabel="clients", ylabel="lock waits, % of the team's request-stage time",
              title="Lock-wait share (real solid, model dashed)")  # fmt: skip
    right.legend(fontsize=7, ncol=2)
    fig.suptitle("QuakeTM on this machine: dm1, independent phases, 100 ms frames, "
                 "sleeping waiters", fontsize=10)  # fmt: skip
    fig.tight_layout()
    return fig
