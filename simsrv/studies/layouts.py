"""How much the death32c stand-in's layout decides the Cordeiro runs: one map per layout.

Usage::

    python -m simsrv.studies.layouts [--layouts 8] [--seeds 3] [--duration 20]
                                     [--runs groups-only,fork-wait] [--out docs/layouts]

*death32c* is one map; the ``death32c-like`` preset draws its two concentration areas per seed,
so by default every seed of a calibration run is another layout.  This study holds the layout
(``run.map_seed = L``) while ``run.seed`` varies the players and packets, for ``L`` = 1..layouts
and each run, and writes ``<out>.csv`` (run, layout, seed, hotspot distance, frames/s,
messages/frame, groups/frame, entities/group) and ``<out>.png``
(:func:`simsrv.figures.layouts.layouts_figure`).  The between-layout spread beside the
within-layout one says whether a published death32c figure is a statement about the server or
about an unknown map.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from simsrv.figures.layouts import layouts_figure  # noqa: E402
from simsrv.pipeline.load import load_scenario  # noqa: E402
from simsrv.pipeline.result import run  # noqa: E402
from simsrv.pipeline.seeding import run_streams  # noqa: E402
from simsrv.pipeline.simulation import build_map  # noqa: E402
from simsrv.sweep.orphan import exit_with_parent  # noqa: E402
from simsrv.validation.quantities import QUANTITIES  # noqa: E402
from simsrv.validation.reference import load_reference  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RUNS = ("groups-only", "fork-wait")
METRICS = {
    "frames_per_s": "frames_per_s",
    "messages_per_frame": "messages_per_frame",
    "groups_per_frame": "groups_per_frame",
    "entities_per_group": "group_size",
}
"""Column of the study table -> the validation quantity it is (:mod:`simsrv.validation.quantities`:
the same numbers ``simsrv validate`` compares with the papers)."""


def published(runs: tuple[str, ...]) -> dict[tuple[str, str], float]:
    """(run, column) -> the paper's value: the mean rows of the reference table
    (``simsrv/validation/reference.toml``) on each run's scenario, for :data:`METRICS`."""
    columns = {quantity: column for column, quantity in METRICS.items()}
    return {
        (run, columns[row.quantity]): row.value
        for run in runs
        for row in load_reference().row
        if row.scenario == f"cordeiro2007/{run}.toml"
        and row.quantity in columns
        and row.statistic == "mean"
        and not row.set
    }


def hotspot_distance(layout: int) -> float:
    """Distance between the two concentration areas of ``layout``'s death32c-like map, units."""
    scenario = load_scenario(
        ROOT / "scenarios/cordeiro2007/groups-only.toml", [f"run.seed={layout}"]
    )
    centres = build_map(scenario, run_streams(scenario.run)).attractors.centres[:, :2]
    return float(np.linalg.norm(centres[0] - centres[-1]))


def _one(job: tuple[str, int, int, float]) -> dict:
    name, layout, seed, duration = job
    path = ROOT / "scenarios" / "cordeiro2007" / f"{name}.toml"
    overrides = [f"run.seed={seed}", f"run.map_seed={layout}", f"run.duration_s={duration}"]
    scenario = load_scenario(path, overrides)
    summary = run(scenario).summary
    row = {"run": name, "layout": layout, "seed": seed}
    row.update(
        {col: QUANTITIES.get(q, "quantity")(summary, scenario) for col, q in METRICS.items()}
    )
    return row


def measure(
    layouts: int, seeds: int, duration: float, runs: tuple[str, ...] = RUNS, workers: int = 2
) -> pd.DataFrame:
    """One row per run, layout and seed (columns ``run``, ``layout``, ``seed``,
    ``hotspot_distance``, then :data:`METRICS`' columns)."""
    jobs = [
        (r, m, s, duration)
        for r in runs
        for m in range(1, layouts + 1)
        for s in range(1, seeds + 1)
    ]
    with ProcessPoolExecutor(workers, initializer=exit_with_parent) as pool:
        table = pd.DataFrame(list(pool.map(_one, jobs)))
    distances = {m: hotspot_distance(m) for m in range(1, layouts + 1)}
    table.insert(2, "hotspot_distance", table["layout"].map(distances))
    return table


def spread(table: pd.DataFrame, column: str = "frames_per_s") -> pd.DataFrame:
    """Per run: the mean, the standard deviation between layout means and the mean standard
    deviation between seeds on one layout, of ``column``."""
    rows = []
    for name, part in table.groupby("run", sort=False):
        per_layout = part.groupby("layout")[column]
        rows.append(
            {
                "run": name,
                "mean": part[column].mean(),
                "between_layouts_sd": per_layout.mean().std(),
                "within_layout_sd": per_layout.std().mean(),
                "layout_min": per_layout.mean().min(),
                "layout_max": per_layout.mean().max(),
            }
        )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layouts", type=int, default=8, help="map layouts (map seeds 1..N)")
    parser.add_argument("--seeds", type=int, default=3, help="player seeds per layout")
    parser.add_argument("--duration", type=float, default=20.0, help="measured simulated s")
    parser.add_argument("--runs", default=",".join(RUNS), help="cordeiro2007 runs, comma-separated")
    parser.add_argument("--out", default=str(ROOT / "docs" / "layouts"), help="output stem")
    args = parser.parse_args(argv)
    runs = tuple(args.runs.split(","))
    unknown = [r for r in runs if not (ROOT / "scenarios/cordeiro2007" / f"{r}.toml").is_file()]
    if unknown:
        parser.error(f"--runs: unknown runs {unknown}; allowed: names in scenarios/cordeiro2007")
    table = measure(args.layouts, args.seeds, args.duration, runs)
    table.to_csv(f"{args.out}.csv", index=False, float_format="%.6g")
    layouts_figure(table, published(runs)).savefig(f"{args.out}.png", dpi=120)
    print(spread(table).round(1).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
