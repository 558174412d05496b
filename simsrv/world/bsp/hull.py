"""Point tests in a BSP tree, vectorised over many points.

Quake answers "what is at this point?" by walking a tree of planes from a head node: at each
node the point goes to child 0 when it is in front of the plane and to child 1 otherwise.  Two
trees matter here:

* hull 0, the drawing/visibility tree (``nodes``): its leaves are the BSP leaves that carry the
  PVS rows, so :meth:`HullTree.leaf_of` gives the leaf a client sees from (``Mod_PointInLeaf``:
  front is ``dot(n, p) - d > 0``);
* hulls 1 and 2, the clipping trees (``clipnodes``) for the player box (hull 1: mins
  (-16, -16, -24), maxs (16, 16, 32)) and the large monster box (hull 2): the map's solids
  grown by the box, so a player's box overlaps a solid exactly when its origin is in solid in
  hull 1 (:meth:`HullTree.contents`, ``SV_HullPointContents``: front is ``>= 0``).

All points advance one tree level per numpy step; id's maps' trees are 17-65 levels deep.  The
reader has checked every tree from every model's head node (:mod:`simsrv.world.bsp.checks`):
no loops, at most :data:`~simsrv.world.bsp.limits.MAX_TREE_DEPTH` levels, every child and
plane in range, so a walk ends within that many steps and needs no checks of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simsrv.world.bsp.reader import CONTENTS_SOLID, BspFile


@dataclass(frozen=True)
class HullTree:
    """One BSP tree flattened into arrays.

    Attributes
    ----------
    normal, dist:
        (K, 3) and (K,) plane of each node (float64).
    children:
        (K, 2) child codes: ``>= 0`` a node, negative a terminal code (a contents value for
        clip hulls, ``-1 - leaf`` for hull 0).
    head:
        The root node.
    front_on_plane:
        Whether a point on a plane goes to the front child (clip hulls) or not (hull 0).
    """

    normal: np.ndarray
    dist: np.ndarray
    children: np.ndarray
    head: int
    front_on_plane: bool = True

    @classmethod
    def of(cls, bsp: BspFile, hull: int, model: int = 0) -> HullTree:
        """Hull ``hull`` (0: visibility tree, 1: player box, 2: large box) of ``model``."""
        head = int(bsp.models[model]["headnode"][hull])
        nodes = bsp.nodes if hull == 0 else bsp.clipnodes
        planes = bsp.planes[nodes["plane"]]
        return cls(
            normal=planes["normal"].astype(float),
            dist=planes["dist"].astype(float),
            children=nodes["children"].astype(np.int64),
            head=head,
            front_on_plane=hull != 0,
        )

    @classmethod
    def hull0(cls, bsp: BspFile, model: int = 0) -> HullTree:
        """The visibility tree of ``model`` (leaves as ``-1 - leaf``)."""
        return cls.of(bsp, 0, model)

    @classmethod
    def hull1(cls, bsp: BspFile, model: int = 0) -> HullTree:
        """The player-box clipping tree of ``model`` (terminal codes are contents)."""
        return cls.of(bsp, 1, model)

    def terminal(self, points: np.ndarray) -> np.ndarray:
        """The negative terminal code each point reaches, (N,) int64."""
        points = np.asarray(points, dtype=float).reshape(-1, 3)
        if len(self.children) == 0:
            return np.full(len(points), CONTENTS_SOLID, dtype=np.int64)
        code = np.full(len(points), self.head, dtype=np.int64)
        active = np.arange(len(points))
        while len(active):
            node = code[active]
            side = np.einsum("ij,ij->i", points[active], self.normal[node]) - self.dist[node]
            back = side < 0 if self.front_on_plane else side <= 0
            code[active] = self.children[node, back.astype(np.int64)]
            active = active[code[active] >= 0]
        return code

    def contents(self, points: np.ndarray) -> np.ndarray:
        """Contents at each point of a clip hull, (N,) int (-2 solid, -1 empty, ...)."""
        return self.terminal(points)

    def solid(self, points: np.ndarray) -> np.ndarray:
        """Whether each point of a clip hull is in solid, (N,) bool."""
        return self.terminal(points) == CONTENTS_SOLID

    def leaf_of(self, points: np.ndarray) -> np.ndarray:
        """Hull 0 leaf index of each point, (N,) int (0: the solid outside)."""
        return -1 - self.terminal(points)
