"""QuakeWorld's areanode tree: a balanced binary split of the map's horizontal extent.

``SV_CreateAreaNode`` (``QW/server/world.c``, MODEL.md §1, §8): a node at depth < ``depth``
splits its region at the midpoint of its longer horizontal side (x when x is strictly longer,
else y; z is never split); depth 4 gives 31 nodes and 16 leaves.  ``SV_LinkEdict`` links an
entity to the deepest node whose region contains its whole bounding box: walking down from the
root, it goes to the child on the far side of the split when the box is entirely above it, to
the near side when entirely below, and stops at a node whose split plane the box straddles.

Nodes are numbered breadth first (heap order): node ``i`` has children ``2i + 1`` (the part
above the split, QuakeWorld's ``children[0]``) and ``2i + 2`` (below), parent ``(i - 1) // 2``,
depth ``floor(log2(i + 1))``.  Relinking as entities move is :meth:`AreanodeTree.link` on the
new boxes (vectorised; cheap enough to redo every frame).  :mod:`simsrv.world.areanode_kernels`
walks the same tree one box at a time for compiled loops (the same integers; these numpy
methods are its reference in the tests).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

AREA_DEPTH = 4
"""QuakeWorld's tree depth (``AREA_DEPTH``): 2^5 - 1 = 31 nodes."""


@dataclass(frozen=True)
class AreanodeTree:
    """The tree's geometry.

    Attributes
    ----------
    depth:
        Depth of the leaves (the root is depth 0).
    axis:
        (nodes,) split axis (0 = x, 1 = y), -1 for leaves.
    dist:
        (nodes,) split coordinate, units (NaN for leaves).
    lo, hi:
        (nodes, 2) the (x, y) region of each node, units.
    """

    depth: int
    axis: np.ndarray
    dist: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def build(
        cls, extent_min: np.ndarray, extent_max: np.ndarray, depth: int = AREA_DEPTH
    ) -> AreanodeTree:
        """The tree over the horizontal extent ``extent_min[:2]..extent_max[:2]``."""
        count = 2 ** (depth + 1) - 1
        axis = np.full(count, -1, dtype=np.int64)
        dist = np.full(count, np.nan)
        lo = np.zeros((count, 2))
        hi = np.zeros((count, 2))
        lo[0], hi[0] = np.asarray(extent_min[:2], float), np.asarray(extent_max[:2], float)
        for node in range(count):
            if node >= 2**depth - 1:
                continue  # a leaf
            size = hi[node] - lo[node]
            a = 0 if size[0] > size[1] else 1
            d = 0.5 * (lo[node, a] + hi[node, a])
            axis[node], dist[node] = a, d
            above, below = 2 * node + 1, 2 * node + 2
            lo[above], hi[above] = lo[node], hi[node]
            lo[above, a] = d
            lo[below], hi[below] = lo[node], hi[node]
            hi[below, a] = d
        return cls(depth, axis, dist, lo, hi)

    @property
    def nodes(self) -> int:
        """Number of nodes (31 for depth 4)."""
        return len(self.axis)

    @staticmethod
    def node_depth(node: np.ndarray) -> np.ndarray:
        """Depth of each node index (root 0)."""
        return np.floor(np.log2(np.asarray(node) + 1)).astype(np.int64)

    @staticmethod
    def level(depth: int) -> np.ndarray:
        """The nodes at ``depth``, in index order: ``2^depth - 1 .. 2^(depth+1) - 2``."""
        return np.arange(2**depth - 1, 2 ** (depth + 1) - 1)

    @staticmethod
    def ancestor(node: np.ndarray, depth: int) -> np.ndarray:
        """Each node's ancestor at ``depth`` (the node itself at that depth); nodes must be at
        ``depth`` or deeper."""
        node = np.asarray(node, dtype=np.int64)
        up = AreanodeTree.node_depth(node) - depth
        if np.any(up < 0):
            raise ValueError(f"a node lies above depth {depth}")
        return ((node + 1) >> up) - 1

    def overlaps(self, nodes: np.ndarray, box_min: np.ndarray, box_max: np.ndarray) -> np.ndarray:
        """Whether each (x, y) box meets each node's region, boundaries included, (N, K) bool."""
        lo, hi = self.lo[nodes], self.hi[nodes]
        return np.all(
            (box_min[:, None, :2] <= hi[None]) & (box_max[:, None, :2] >= lo[None]), axis=2
        )

    @staticmethod
    def parent(node: np.ndarray) -> np.ndarray:
        """Parent of each node (the root's parent is itself)."""
        node = np.asarray(node)
        return np.where(node > 0, (node - 1) // 2, 0)

    def link(self, box_min: np.ndarray, box_max: np.ndarray) -> np.ndarray:
        """The node each box is linked to, as ``SV_LinkEdict`` walks down, (N,) int.

        ``box_min``, ``box_max``: (N, 2+) corners (only x and y are used), units.
        """
        node = np.zeros(len(box_min), dtype=np.int64)
        moving = np.ones(len(box_min), dtype=bool)
        rows = np.arange(len(box_min))
        for _ in range(self.depth):
            a = self.axis[node]
            leaf = a < 0
            safe = np.where(leaf, 0, a)
            d = self.dist[node]
            above = box_min[rows, safe] > d
            below = box_max[rows, safe] < d
            step = moving & ~leaf & (above | below)
            node = np.where(step, np.where(above, 2 * node + 1, 2 * node + 2), node)
            moving = step
        return node

    def contains(self, node: np.ndarray, box_min: np.ndarray, box_max: np.ndarray) -> np.ndarray:
        """Whether each node's region contains the whole (x, y) box, (N,) bool."""
        return np.all((self.lo[node] <= box_min[:, :2]) & (box_max[:, :2] <= self.hi[node]), axis=1)

    def covering(
        self, start: np.ndarray, box_min: np.ndarray, box_max: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Walk up from ``start`` to the first node whose region contains each box.

        Returns ``(node, steps)``: the covering node (the root when nothing smaller does) and
        the number of parent steps walked, (N,) int each.
        """
        node = np.asarray(start, dtype=np.int64).copy()
        steps = np.zeros(len(node), dtype=np.int64)
        for _ in range(self.depth):
            up = ~self.contains(node, box_min, box_max) & (node > 0)
            if not up.any():
                break
            node = np.where(up, (node - 1) // 2, node)
            steps += up
        return node, steps
