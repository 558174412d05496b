"""``areanode``: each zone is one subtree of the map's areanode tree (static).

The tree is QuakeWorld's (``SV_CreateAreaNode``, :class:`simsrv.world.areanode.AreanodeTree`):
the extent's xy rectangle halved at the midpoint of its longer side, recursively, to depth
``max(4, ceil(log2(nodes)))`` (QuakeWorld's depth 4, 16 leaves, up to 16 nodes; deeper only
when there are more nodes than leaves).

Rule (recursive, from the root with ``k = nodes`` zones to make): a tree node with ``k = 1``
is one zone (its whole subtree); with ``k >= 2`` its two children share the ``k`` zones in
proportion to their weights, ``k_above = floor(k w_above / (w_above + w_below) + 1/2)`` (half
each when both weigh 0), clipped so that each child gets at least one zone and no more zones
than its leaves.  The weight (``cluster.areanode_weight``) is the region's ``area`` (the two
halves of a node always weigh the same, so the zones split as evenly as the tree allows) or
its static map ``entities`` (doors, items, spawn points...: the map's entity positions; a
proxy for where the game happens).

So every zone is a rectangle that is a union of leaves (one subtree), the zones are the tree's
regions, and with ``nodes`` a power of two and area weights they are the ``nodes`` regions of
depth ``log2(nodes)``: equal areas (4 nodes: the quarters, the same rectangles as the 2 x 2
grid on a square map).  When ``nodes`` is not a power of two the subtrees cannot all be equal:
3 nodes on area weights give one half and two quarters; 5 give a quarter, a quarter and three
eighths... (the larger share goes to the ``above`` child, QuakeWorld's ``children[0]``, on a
tie).  The zones never move.
"""

from __future__ import annotations

import math

import numpy as np

from simsrv.pipeline.cluster.zoning.base import ZONINGS, ZoningKind, setting
from simsrv.pipeline.cluster.zoning.cuts import Cut, CutZoning
from simsrv.world.areanode import AREA_DEPTH, AreanodeTree
from simsrv.world.maps.base import GameMap

WEIGHTS = ("area", "entities")


def tree_depth(nodes: int) -> int:
    """Depth of the tree the zones are cut from: QuakeWorld's 4, or enough leaves."""
    return max(AREA_DEPTH, math.ceil(math.log2(nodes)))


def leaf_weights(tree: AreanodeTree, weight: str, entities: np.ndarray) -> np.ndarray:
    """(leaves,) weight of each leaf, in index order of :meth:`AreanodeTree.level`."""
    leaves = AreanodeTree.level(tree.depth)
    if weight == "area":
        size = tree.hi[leaves] - tree.lo[leaves]
        return size[:, 0] * size[:, 1]
    if len(entities) == 0:
        return np.zeros(len(leaves))
    return np.bincount(leaf_of(tree, entities) - leaves[0], minlength=len(leaves)).astype(float)


def leaf_of(tree: AreanodeTree, xy: np.ndarray) -> np.ndarray:
    """The leaf holding each point (a point on a split goes to the ``above`` side)."""
    node = np.zeros(len(xy), dtype=np.int64)
    rows = np.arange(len(xy))
    for _ in range(tree.depth):
        above = xy[rows, tree.axis[node]] >= tree.dist[node]
        node = np.where(above, 2 * node + 1, 2 * node + 2)
    return node


def assign(tree: AreanodeTree, leaf_weight: np.ndarray, nodes: int) -> tuple[Cut | int, dict]:
    """The cut tree of the rule (module docstring) and ``{zone: areanode node}``."""
    first_leaf = 2**tree.depth - 1
    subtree: dict[int, int] = {}

    def weight(node: int) -> float:
        depth = int(AreanodeTree.node_depth(node))
        span = 2 ** (tree.depth - depth)
        start = ((node + 1) << (tree.depth - depth)) - 1 - first_leaf
        return float(leaf_weight[start : start + span].sum())

    def split(node: int, k: int) -> Cut | int:
        if k == 1:
            zone = len(subtree)
            subtree[zone] = node
            return zone
        above, below = 2 * node + 1, 2 * node + 2
        cap = 2 ** (tree.depth - int(AreanodeTree.node_depth(above)))
        w_above, w_below = weight(above), weight(below)
        share = 0.5 if w_above + w_below == 0 else w_above / (w_above + w_below)
        k_above = min(max(math.floor(k * share + 0.5), 1, k - cap), cap, k - 1)
        low = split(below, k - k_above)  # zones numbered low side first
        high = split(above, k_above)
        return Cut(int(tree.axis[node]), float(tree.dist[node]), low, high)

    return split(0, nodes), subtree


class AreanodeZoning(CutZoning):
    """Zones = areanode subtrees (module docstring); ``subtree[z]`` is zone ``z``'s node."""

    def __init__(self, game_map: GameMap, nodes: int, border: float, weight: str) -> None:
        self.tree = AreanodeTree.build(game_map.extent_min, game_map.extent_max, tree_depth(nodes))
        entities = np.asarray(game_map.entities, dtype=float).reshape(-1, 3)[:, :2]
        root, self.subtree = assign(self.tree, leaf_weights(self.tree, weight, entities), nodes)
        super().__init__(game_map.extent_min, game_map.extent_max, nodes, border, root)


def build(game_map: GameMap, nodes: int, border: float, cluster: object = None) -> AreanodeZoning:
    """The areanode zones over ``game_map``; ``cluster.areanode_weight`` (default area)."""
    return AreanodeZoning(game_map, nodes, border, setting(cluster, "areanode_weight", "area"))


ZONINGS.register("areanode", ZoningKind("areanode", build))
