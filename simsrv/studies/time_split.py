"""Where the Cordeiro Xeon's time goes: the calibrated model beside the papers' shares.

Usage::

    python -m simsrv.studies.time_split [--seeds 3] [--duration 5] [--out docs/time-split]

Runs ``scenarios/cordeiro2007/{sequential,groups-only,clone-wait,clone-nowait,
clone-nowait-cube}`` and writes ``<out>.csv`` (run, seed, part or moment, share) and
``<out>.png`` (:func:`simsrv.figures.time_split.time_split_figure`).
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402

from simsrv.figures.time_split import part_shares, time_split_figure  # noqa: E402
from simsrv.pipeline.load import load_scenario  # noqa: E402
from simsrv.pipeline.result import run  # noqa: E402
from simsrv.sweep.orphan import exit_with_parent  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RUNS = ("sequential", "groups-only", "clone-wait", "clone-nowait", "clone-nowait-cube")
ALL_BUSY = {"clone-nowait": 0.5565, "clone-nowait-cube": 0.5365}  # [T §4.4.6, P §5.2]


def _one(job: tuple[str, int, float]) -> list[dict]:
    name, seed, duration = job
    path = ROOT / "scenarios" / "cordeiro2007" / f"{name}.toml"
    scenario = load_scenario(path, [f"run.seed={seed}", f"run.duration_s={duration}"])
    summary = run(scenario).summary
    rows = [
        {"run": name, "seed": seed, "kind": "part", "name": k, "share": v}
        for k, v in part_shares(summary["time_breakdown"]).items()
    ]
    rows += [
        {"run": name, "seed": seed, "kind": "moment", "name": k, "share": v}
        for k, v in summary["moments"].items()
    ]
    return rows


def measure(seeds: int, duration: float, workers: int = 2) -> pd.DataFrame:
    """One row per run, seed and part or moment (columns ``run``, ``seed``, ``kind``,
    ``name``, ``share``)."""
    jobs = [(name, s, duration) for name in RUNS for s in range(1, seeds + 1)]
    with ProcessPoolExecutor(workers, initializer=exit_with_parent) as pool:
        rows = [r for rs in pool.map(_one, jobs) for r in rs]
    return pd.DataFrame(rows)


def figure(table: pd.DataFrame):
    """The figure of a :func:`measure` table."""
    mean = table.groupby(["run", "kind", "name"], sort=False).share.mean().reset_index()
    parts = mean[mean.kind == "part"].rename(columns={"name": "part"})
    moments = mean[mean.kind == "moment"].rename(columns={"name": "moment"})
    seeds = table.seed.nunique()
    return time_split_figure(
        parts,
        moments,
        ALL_BUSY,
        f"Where the time goes: cordeiro2007-xeon, death32c-like (cube: -cube), 160 clients, "
        f"mean of {seeds} seeds",
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "time-split")
    args = parser.parse_args(argv)
    table = measure(args.seeds, args.duration)
    table.to_csv(args.out.with_suffix(".csv"), index=False, float_format="%.5f")
    figure(table).savefig(args.out.with_suffix(".png"), dpi=110)
    print(f"wrote {args.out.with_suffix('.csv')} and {args.out.with_suffix('.png')}")


if __name__ == "__main__":
    main()
