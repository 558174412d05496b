"""Action-range lists per tick: the compiled cell list against the k-d tree it replaced.

For each scenario, the world is built (settling walk included) and advanced a few ticks; then
the lists of one tick are computed ``--repeat`` times by both and the medians printed.  The
k-d tree path is the one before the cell list: ``cKDTree.query_pairs`` in the Chebyshev metric,
both directions, one argsort, plus its pair-budget grid bound above ~8,000 entities.  The two
must give identical lists (checked).

    python benchmarks/proximity_speed.py
    python benchmarks/proximity_speed.py --scenarios my-1m-players.toml --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
from scipy.spatial import cKDTree

from simsrv import load_scenario
from simsrv.pipeline.seeding import spawn_streams
from simsrv.pipeline.simulation import build_world
from simsrv.world.proximity import MAX_PAIRS, neighbour_lists

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = (
    "scenarios/cube-160.toml",
    "scenarios/scale/abdelkhalek-clients1000-cpus8.toml",
    "scenarios/scale/clients1000-cpus16.toml",
    "scenarios/scale/clients10000-cpus64.toml",
    "scenarios/scale/clients100000-cpus256.toml",
)


def grid_bound(points: np.ndarray, radius: float) -> int:
    """The k-d tree path's cheap pair bound (run above ~8,000 entities)."""
    n = len(points)
    low = points[:, :2].min(axis=0)
    extent = points[:, :2].max(axis=0) - low
    side = max(radius, 1e-9)
    cells = np.floor(extent / side) + 1
    budget = 4 * n + 1024
    if cells[0] * cells[1] > budget:
        side *= float(np.sqrt(cells[0] * cells[1] / budget)) * 1.01
    index = np.minimum(np.floor((points[:, :2] - low) / side).astype(np.int64), 1 << 40)
    nx, ny = int(index[:, 0].max()) + 1, int(index[:, 1].max()) + 1
    flat = (index[:, 0] + 1) * (ny + 2) + index[:, 1] + 1
    grid = np.bincount(flat, minlength=(nx + 2) * (ny + 2)).reshape(nx + 2, ny + 2)
    block = sum(
        grid[1 + dx : nx + 1 + dx, 1 + dy : ny + 1 + dy] for dx in (-1, 0, 1) for dy in (-1, 0, 1)
    )
    return int((grid[1:-1, 1:-1] * block).sum() - n) // 2


def tree_lists(players: np.ndarray, entities: np.ndarray, edge: float):
    n = len(players)
    points = players if len(entities) == 0 else np.vstack([players, entities])
    tree = cKDTree(points)
    many = len(points) * (len(points) - 1) // 2 > MAX_PAIRS
    if many and grid_bound(points, edge / 2) > MAX_PAIRS:
        tree.count_neighbors(tree, edge / 2, p=np.inf)
    pairs = tree.query_pairs(r=edge / 2, p=np.inf, output_type="ndarray")
    source = np.concatenate([pairs[:, 0], pairs[:, 1]])
    target = np.concatenate([pairs[:, 1], pairs[:, 0]])
    keep = source < n
    source, target = source[keep], target[keep]
    order = np.argsort(source * len(points) + target)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(source, minlength=n), out=indptr[1:])
    return indptr, target[order].astype(np.int32)


def median_ms(function, args: tuple, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument(
        "--scenarios",
        nargs="+",
        default=list(SCENARIOS),
        help="scenario files (default: the shipped scale scenarios, relative to the checkout)",
    )
    args = parser.parse_args()
    print("| scenario | players | listed per player | k-d tree, ms | cell list, ms | ratio |")
    print("|---|---|---|---|---|---|")
    for name in args.scenarios:
        scenario = load_scenario(ROOT / name, [])
        world = build_world(scenario, spawn_streams(scenario.run.seed))
        for _ in range(3):
            world.advance(1.0 / scenario.clients.rate_hz)
        players, entities = world.mobility.positions.copy(), world.map.entities
        edge = scenario.players.action_range
        indptr, indices = tree_lists(players, entities, edge)
        lists = neighbour_lists(players, entities, edge)
        assert np.array_equal(indptr, lists.indptr) and np.array_equal(indices, lists.indices)
        tree = median_ms(tree_lists, (players, entities, edge), args.repeat)
        cells = median_ms(neighbour_lists, (players, entities, edge), args.repeat)
        print(
            f"| `{name.removeprefix('scenarios/')}` | {len(players):,} | "
            f"{len(indices) / len(players):.1f} | {tree:.2f} | {cells:.2f} | {tree / cells:.1f}x |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
