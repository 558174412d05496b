"""Capacity of a cluster of game servers against its number of nodes.

Usage::

    python -m simsrv.studies.cluster_capacity [--quick] [--seeds 3] [--nodes 1 2 4 ... 64]
        [--zonings grid areanode] [--profiles libvip tcp] [--duration 1.0]
        [--out docs/cluster-study] [--workers 2]

Every search is the capacity search of :mod:`simsrv.sweep.capacity` (bisection: double from 128
clients per node, then bisect to 8 clients per node; replies/s >= 0.8 x offered, <= 20 %
dropped) on ``scenarios/cluster/nodes4-cpus2-640.toml`` (nodes of 2 CPUs, the Cordeiro Xeon,
BSP-group) with the map of ``sweeps/cluster-capacity.toml``: a hotspot arena of side
``2048 x sqrt(nodes)`` (each zone has cube-160's area) with 4 concentration areas of radius 256
per node at random places (drawn from the seed), ``run.warmup_s`` 1 s and ``--duration`` s
measured.  One node is today's server (the zoning and the interconnect do not matter there:
it runs once per seed and stands for every zoning and profile).  Zonings default to ``grid``
plus ``areanode`` and ``load-aware`` when registered (:data:`ZONINGS`).

Writes (``<out>`` the prefix):

* ``<out>-capacity.csv``: one row per search: ``nodes``, ``zoning``, ``profile``, ``seed``,
  ``capacity_clients``, ``capacity_per_node``, ``runs``, ``wall_time_s``;
* ``<out>-points.csv``: every count tried: the search's columns plus ``clients``,
  ``replies_per_s``, ``offered_per_s``, ``dropped_fraction``, ``met`` and the cluster details
  of :func:`simsrv.sweep.capacity_sweep.cluster_details` (traffic, imbalance, worst node);
* ``<out>-capacity.png``, ``<out>-traffic.png``, ``<out>-zones.png`` (the figures of
  :mod:`simsrv.figures.cluster_capacity`, :mod:`simsrv.figures.cluster_traffic`,
  :mod:`simsrv.figures.zone_map`); ``<out>-summary.csv``: capacity mean, 95 % CI per
  configuration.

``--quick``: nodes 1, 2 and 4, one seed, grid and libVIP, 0.5 s measured (a test of the
pipeline, not a result).

Nothing finished is lost: the two CSV tables are written again as each search finishes (the
searches finished so far, one node not yet copied to the other zonings and profiles), and
Ctrl-C or SIGTERM stops the workers, leaves those tables and exits with 130.  A search that
raises is reported on stderr and left out; the others go on.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402

from simsrv.pipeline.cluster.zoning import ZONINGS  # noqa: E402
from simsrv.pipeline.load import load_scenario  # noqa: E402
from simsrv.sweep.capacity import search_capacity  # noqa: E402
from simsrv.sweep.capacity_sweep import (  # noqa: E402
    capacity_summary,
    cluster_details,
    search_tables,
)
from simsrv.sweep.local import run_parallel  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "scenarios" / "cluster" / "nodes4-cpus2-640.toml"
NODES = (1, 2, 4, 8, 16, 32, 64)
PROFILES = ("libvip", "tcp")
WANTED_ZONINGS = ("grid", "areanode", "load-aware")
START, STEP, MAX = 128, 8, 512
"""The search per node: first count, resolution and largest count (times the nodes)."""
ZONE_SIDE = 2048.0
AREAS_PER_NODE = 4
AREA_RADIUS = 256.0


def overrides(nodes: int, zoning: str, profile: str, seed: int, duration: float) -> list[str]:
    """The ``--set`` items of one configuration (module docstring)."""
    return [
        f"cluster.nodes={nodes}",
        f'cluster.zoning="{zoning}"',
        f'cluster.interconnect="{profile}"',
        f"run.seed={seed}",
        "run.warmup_s=1.0",
        f"run.duration_s={duration}",
        'map.layout="random"',
        f"map.radius={AREA_RADIUS}",
        f"map.count={AREAS_PER_NODE * nodes}",
        f"map.base_params.size={ZONE_SIDE * nodes**0.5:.1f}",
    ]


def search(job: tuple[int, str, str, int, float]) -> tuple[dict, list[dict]]:
    """One capacity search: (nodes, zoning, profile, seed, duration s)."""
    nodes, zoning, profile, seed, duration = job
    items = overrides(nodes, zoning, profile, seed, duration)
    started = time.perf_counter()
    found = search_capacity(
        lambda clients: load_scenario(str(BASE), [*items, f"players.count={clients}"]),
        start=START * nodes,
        step=STEP * nodes,
        max_clients=MAX * nodes,
        search="bisect",
        describe=cluster_details,
    )
    head = {"nodes": nodes, "zoning": zoning, "profile": profile, "seed": seed}
    row = {
        **head,
        "capacity_clients": found.capacity_clients,
        "capacity_per_node": found.capacity_clients / nodes,
        "runs": len(found.points),
        "wall_time_s": time.perf_counter() - started,
    }
    return row, [{**head, **p} for p in found.points]


def default_zonings() -> list[str]:
    """``grid`` plus the other wanted zonings that are registered."""
    return [z for z in WANTED_ZONINGS if z in ZONINGS.names()]


Job = tuple[int, str, str, int, float]
"""One search: (nodes, zoning, profile, seed, measured s)."""


def measure(
    nodes: list[int],
    zonings: list[str],
    profiles: list[str],
    seeds: int,
    duration: float,
    workers: int,
    on_progress: Callable[[pd.DataFrame, pd.DataFrame], None] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every search (one node once per seed, copied to each zoning and profile).
    ``on_progress(rows, points)``: called with the searches finished so far (in the jobs'
    order) each time one finishes.  A search that raised is left out (reported on stderr)."""
    jobs: list[Job] = [
        (n, z, p, s, duration)
        for n in sorted(nodes, reverse=True)  # the longest searches first
        for z in (zonings if n > 1 else zonings[:1])
        for p in (profiles if n > 1 else profiles[:1])
        for s in range(1, seeds + 1)
    ]
    results: dict[int, tuple[dict, list[dict]]] = {}

    def done(index: int, result: tuple[dict, list[dict]] | None) -> None:
        if result is None:
            return
        results[index] = result
        if on_progress is not None:
            on_progress(*search_tables(results))

    def failed(index: int, error: BaseException) -> None:
        n, z, p, s, _ = jobs[index]
        print(
            f"search nodes={n} zoning={z} profile={p} seed={s} failed: "
            f"{type(error).__name__}: {error}",
            file=sys.stderr,
        )

    run_parallel(jobs, search, workers, done, failed)
    rows, points = search_tables(results)
    single = rows[rows.nodes == 1]
    copies = [
        single.assign(zoning=z, profile=p)
        for z in zonings
        for p in profiles
        if (z, p) != (zonings[0], profiles[0])
    ]
    rows = pd.concat([rows, *copies], ignore_index=True)
    return rows, points


def write_tables(rows: pd.DataFrame, points: pd.DataFrame, out: Path) -> None:
    """``<out>-capacity.csv`` and ``<out>-points.csv`` (each replaced whole, atomically)."""
    for name, frame in (("capacity", rows), ("points", points)):
        path = Path(f"{out}-{name}.csv")
        partial = path.with_name(path.name + ".partial")
        frame.to_csv(partial, index=False, float_format="%.6g")
        partial.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simsrv.studies.cluster_capacity")
    parser.add_argument("--quick", action="store_true", help="nodes 1 2 4, 1 seed, 0.5 s")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--nodes", type=int, nargs="+", default=list(NODES))
    parser.add_argument("--zonings", nargs="+", default=None)
    parser.add_argument("--profiles", nargs="+", default=list(PROFILES))
    parser.add_argument("--duration", type=float, default=1.0, help="measured s per run")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "cluster-study")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    zonings = args.zonings or default_zonings()
    if args.quick:
        args.nodes, args.seeds, args.duration = [1, 2, 4], 1, 0.5
        zonings, args.profiles = zonings[:1], args.profiles[:1]
    unknown = [z for z in zonings if z not in ZONINGS.names()]
    if unknown:
        allowed = ", ".join(ZONINGS.names())
        print(f"--zonings: unknown {', '.join(unknown)}; allowed: {allowed}", file=sys.stderr)
        return 2
    if min(args.nodes) < 1 or args.seeds < 1 or args.duration <= 0:
        print("--nodes, --seeds: whole numbers >= 1; --duration: > 0", file=sys.stderr)
        return 2
    missing = [z for z in WANTED_ZONINGS if z not in ZONINGS.names()]
    if missing and args.zonings is None:
        print(f"zonings not registered (left out): {', '.join(missing)}", file=sys.stderr)
    out = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    kept = [0]

    def progress(rows: pd.DataFrame, points: pd.DataFrame) -> None:
        write_tables(rows, points, out)
        kept[0] = len(rows)

    try:
        rows, points = measure(
            args.nodes, zonings, args.profiles, args.seeds, args.duration, args.workers, progress
        )
    except KeyboardInterrupt:
        where = f"; their rows are in {out}-capacity.csv and {out}-points.csv"
        print(f"interrupted: {kept[0]} searches had finished{where if kept[0] else ''}",
              file=sys.stderr)  # fmt: skip
        return 130
    if rows.empty:
        print("no search finished", file=sys.stderr)
        return 1
    write_tables(rows, points, out)
    summary = capacity_summary(rows, ["zoning", "profile", "nodes"])
    summary.to_csv(f"{out}-summary.csv", index=False, float_format="%.6g")
    print(summary.to_string(index=False))
    draw(rows, points, out)
    return 0


def draw(rows: pd.DataFrame, points: pd.DataFrame, out: Path) -> None:
    """The study's three figures."""
    from simsrv.figures.cluster_capacity import capacity_figure
    from simsrv.figures.cluster_traffic import traffic_figure
    from simsrv.figures.zone_map import zone_map_figure, zone_map_frame

    capacity_figure(rows).savefig(f"{out}-capacity.png", dpi=110)
    traffic_figure(points).savefig(f"{out}-traffic.png", dpi=110)
    nodes = int(rows.nodes.max())
    at = rows[rows.nodes == nodes].capacity_clients.min()
    items = overrides(nodes, "grid", "libvip", 1, 1.0)
    scenario = load_scenario(str(BASE), [*items, f"players.count={max(int(at), nodes)}"])
    zones, players, areas = zone_map_frame(scenario, tick=0)
    zone_map_figure(zones, players, areas, f"{nodes} nodes, grid zoning, seed 1").savefig(
        f"{out}-zones.png", dpi=110
    )


if __name__ == "__main__":
    sys.exit(main())
