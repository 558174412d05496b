"""Lock, barrier and any-thread waits of AB04's threaded server against the client count.

Usage::

    python -m simsrv.studies.abdelkhalek2004 [--seeds 2] [--duration 2] [--out docs/abdelkhalek2004]

Runs ``scenarios/abdelkhalek2004/{threads4-region,threads8-region,threads8-region-optimized}``
(8 logical CPUs of the 4 x 2-way HT platform) from 40 to 232 clients in steps of 24, and draws
the three waiting fractions against the clients with AB04's figures as bands of +- 10 points
(the tolerance) and the sequential capacity (88 clients) marked.  Writes
``<out>-waits.csv`` (one row per run, the columns of :mod:`simsrv.sweep.records` plus
``variant``) and ``<out>-waits.png``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from simsrv.sweep import compare, mean_ci  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios" / "abdelkhalek2004"
VARIANTS = ("threads4-region", "threads8-region", "threads8-region-optimized")
CLIENTS = tuple(range(40, 233, 24))
SEQUENTIAL_CAPACITY = 88  # docs/abdelkhalek.md
AB04 = {
    # metric -> (AB04's figure [MODEL §3], label)
    "lock_wait_fraction": (0.30, "AB04 ~30 % (8 threads)"),
    "barrier_wait_fraction": (0.40, "AB04 ~40 %"),
    "any_waiting_fraction": (0.70, "AB04 up to ~70 %"),
}
TITLES = {
    "lock_wait_fraction": "waiting for locks (share of thread time)",
    "barrier_wait_fraction": "waiting at barriers (share of thread time)",
    "any_waiting_fraction": "at least one thread waiting (share of time)",
}


def waits_figure(runs: pd.DataFrame) -> Figure:
    """One panel per waiting fraction against clients, a line per variant (mean and 95 % CI
    over seeds), AB04's figure as a band of +- 10 points."""
    fig, axes = plt.subplots(1, 3, figsize=(13.0, 4.2), layout="constrained", sharey=True)
    for ax, metric in zip(axes, AB04, strict=True):
        for variant, rows in runs.groupby("variant", sort=False):
            stats = mean_ci(rows, [metric]).sort_values("clients")
            band = stats["ci95"].fillna(0.0)
            line = ax.plot(stats["clients"], stats["mean"], marker="o", label=variant)[0]
            ax.fill_between(
                stats["clients"],
                stats["mean"] - band,
                stats["mean"] + band,
                color=line.get_color(),
                alpha=0.2,
            )
        value, label = AB04[metric]
        ax.axhspan(value - 0.1, value + 0.1, color="grey", alpha=0.15, label=f"{label} +- 10 pts")
        ax.axvline(SEQUENTIAL_CAPACITY, color="black", linestyle=":", label="sequential capacity")
        ax.set_title(TITLES[metric], fontsize=9)
        ax.set_xlabel("clients")
        ax.set_ylim(0, 1)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("fraction")
    fig.suptitle("AB04's threaded server on 4 x 2-way HT CPUs: waits against load", fontsize=10)
    return fig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simsrv.studies.abdelkhalek2004")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--duration", type=float, default=2.0, help="measured simulated s")
    parser.add_argument("--out", default=str(ROOT / "docs" / "abdelkhalek2004"))
    args = parser.parse_args(argv)
    parts = []
    for variant in VARIANTS:
        results = compare(
            SCENARIOS / f"{variant}.toml",
            strategies=["abdelkhalek"],
            cpus=[8],
            clients=list(CLIENTS),
            seeds=args.seeds,
            duration_s=args.duration,
        )
        parts.append(results.runs.assign(variant=variant))
        print(f"{variant}: {len(results.runs)} runs", flush=True)
    runs = pd.concat(parts, ignore_index=True)
    runs.to_csv(f"{args.out}-waits.csv", index=False)
    waits_figure(runs).savefig(f"{args.out}-waits.png", dpi=130)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
