"""Consistency checks of a BSP 29 file's records: a map file is untrusted input.

:func:`check_bsp` runs once per load, after the reader has checked that every lump lies
inside the file and holds whole records (so every table's length is known and bounded by
:mod:`simsrv.world.bsp.limits`).  It refuses, with one :class:`BspError` line:

* an index outside the table it points into: node and clip-node planes and children, the
  faces of nodes and models, the mark surfaces of leaves, the head nodes of every model's
  hulls 0-2, the world's ``visleafs``, the leaves' PVS offsets;
* a value no map has: non-finite planes, inverted leaf boxes, model boxes that are not
  finite, inverted or beyond :data:`~simsrv.world.bsp.limits.MAX_COORD`;
* a loop in the node or clip-node tree, or a path from a head node deeper than
  :data:`~simsrv.world.bsp.limits.MAX_TREE_DEPTH` levels.

After it, a walk from any model's head node reaches a leaf or a contents code within
``MAX_TREE_DEPTH`` steps, touching only valid nodes and planes: the walkers
(:class:`~simsrv.world.bsp.hull.HullTree`, or a compiled one) need no checks of their own.
The checks are vectorised numpy, a few milliseconds on the largest id map.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

import numpy as np

from simsrv.world.bsp.errors import BspError
from simsrv.world.bsp.limits import MAX_COORD, MAX_TREE_DEPTH

if TYPE_CHECKING:
    from simsrv.world.bsp.reader import BspFile

Fail = Callable[[str], NoReturn]

LOWEST_CONTENTS = -15
"""The most negative contents code a clip node's child may be (id's ``CONTENTS_*`` run from
-1 empty to -14, -15 is Half-Life's translucent)."""


def check_bsp(bsp: BspFile, name: str, *, faces: int, marksurfaces: int) -> None:
    """Raise :class:`BspError` on the first inconsistency of ``bsp`` (see the module).

    ``faces`` and ``marksurfaces`` are the record counts of those lumps (not read).
    """

    def fail(what: str) -> NoReturn:
        raise BspError(f"map.file: {name}: inconsistent BSP: {what}")

    if len(bsp.models) == 0:
        fail("no world model")
    for table in ("leaves", "nodes", "clipnodes"):  # a walk needs a tree and somewhere to end
        if len(getattr(bsp, table)) == 0:
            fail(f"no {table}")
    _check_planes(bsp.planes, fail)
    _check_nodes(bsp, faces, fail)
    _check_clipnodes(bsp, fail)
    _check_leaves(bsp, marksurfaces, fail)
    _check_models(bsp, faces, fail)
    heads = bsp.models["headnode"].astype(np.int64)
    check_tree(bsp.nodes["children"], heads[:, 0], "node", fail)
    check_tree(bsp.clipnodes["children"], heads[:, 1:3].ravel(), "clip node", fail)


def _outside(values: np.ndarray, low: int, high: int) -> bool:
    """Whether some value is outside ``low .. high - 1`` (int64 arithmetic)."""
    values = np.asarray(values, dtype=np.int64)
    return bool(values.size) and bool(np.any((values < low) | (values >= high)))


def _check_planes(planes: np.ndarray, fail: Fail) -> None:
    """Every plane's normal and distance are finite numbers."""
    if not (np.isfinite(planes["normal"]).all() and np.isfinite(planes["dist"]).all()):
        fail("a plane's normal or distance is not a finite number")


def _check_nodes(bsp: BspFile, faces: int, fail: Fail) -> None:
    """Node planes, children (``>= 0`` a node, ``-1 - leaf`` a leaf) and faces in range."""
    nodes, n_nodes, n_leaves = bsp.nodes, len(bsp.nodes), len(bsp.leaves)
    if _outside(nodes["plane"], 0, len(bsp.planes)):
        fail(f"a node's plane is outside the {len(bsp.planes)} planes")
    children = nodes["children"].astype(np.int64)
    if _outside(children, -n_leaves, n_nodes):
        fail(f"a node's child is outside the {n_nodes} nodes / {n_leaves} leaves")
    last_face = nodes["firstface"].astype(np.int64) + nodes["numfaces"]
    if np.any(last_face > faces):
        fail(f"a node's faces run past the {faces} faces")


def _check_clipnodes(bsp: BspFile, fail: Fail) -> None:
    """Clip-node planes and children (``>= 0`` a clip node, negative a contents code)."""
    clip = bsp.clipnodes
    if _outside(clip["plane"], 0, len(bsp.planes)):
        fail(f"a clip node's plane is outside the {len(bsp.planes)} planes")
    if _outside(clip["children"], LOWEST_CONTENTS, len(clip)):
        fail(f"a clip node's child is outside the {len(clip)} clip nodes or the contents codes")


def _check_leaves(bsp: BspFile, marksurfaces: int, fail: Fail) -> None:
    """PVS offsets (-1: no row) inside the visibility lump; mark surfaces in range; boxes
    with mins <= maxs (a leaf's box is a room, and free floor is drawn inside it)."""
    if np.any(bsp.leaves["mins"] > bsp.leaves["maxs"]):
        fail("a leaf's box has mins above maxs")
    if _outside(bsp.leaves["visofs"], -1, len(bsp.visibility)):
        fail(f"a leaf's PVS offset is outside the {len(bsp.visibility)}-byte visibility lump")
    leaves = bsp.leaves
    last = leaves["firstmarksurface"].astype(np.int64) + leaves["nummarksurfaces"]
    if np.any(last > marksurfaces):
        fail(f"a leaf's mark surfaces run past the {marksurfaces} mark surfaces")


def _check_models(bsp: BspFile, faces: int, fail: Fail) -> None:
    """Every model's boxes, head nodes (hull 0 a node, hulls 1-2 clip nodes) and faces; the
    world's ``visleafs`` (leaves 1..visleafs have PVS rows; leaf 0 is the solid outside)."""
    models, n_nodes, n_clip = bsp.models, len(bsp.nodes), len(bsp.clipnodes)
    box = np.concatenate([models["mins"], models["maxs"]], axis=1)
    if not np.isfinite(box).all():
        fail("a model's bounding box is not finite")
    if np.any(np.abs(box) > MAX_COORD):
        fail(f"a model's bounding box reaches beyond +-{MAX_COORD:g} units")
    if np.any(models["mins"] > models["maxs"]):
        fail("a model's bounding box has mins above maxs")
    heads = models["headnode"].astype(np.int64)
    world_head = int(heads[0, 0])
    if not 0 <= world_head < n_nodes:
        fail(f"the world's hull 0 head node {world_head} is outside the {n_nodes} nodes")
    if _outside(heads[:, 0], 0, n_nodes):
        fail(f"a model's hull 0 head node is outside the {n_nodes} nodes")
    if _outside(heads[:, 1:3], 0, n_clip):
        fail(f"a model's hull 1 or 2 head node is outside the {n_clip} clip nodes")
    first = models["firstface"].astype(np.int64)
    if (
        np.any(first < 0)
        or np.any(models["numfaces"] < 0)
        or np.any(first + models["numfaces"] > faces)
    ):
        fail(f"a model's faces run past the {faces} faces")
    visleafs = int(models[0]["visleafs"])
    if not 0 <= visleafs < len(bsp.leaves):
        fail(f"the world's {visleafs} visible leaves exceed the {len(bsp.leaves)} leaves")


def check_tree(children: np.ndarray, heads: np.ndarray, what: str, fail: Fail) -> None:
    """Every path from ``heads`` ends (at a negative child) within ``MAX_TREE_DEPTH`` levels.

    ``children`` is (K, 2), K >= 1, with every nonnegative child ``< K`` and ``heads`` in
    ``0 .. K-1`` (checked before).  Walks all heads at once, one level per numpy step, keeping
    each node once per level (a tree may share subtrees); a level still holding nodes after
    ``MAX_TREE_DEPTH`` steps means a loop (named) or a tree too deep.  Cost: the sum of the
    level sizes, about K for a tree.
    """
    kids = np.asarray(children, dtype=np.int64)
    level = np.unique(heads)
    seen = np.zeros(len(kids), dtype=bool)
    for _ in range(MAX_TREE_DEPTH):
        below = kids[level].ravel()
        below = below[below >= 0]
        if below.size == 0:
            return
        seen[below] = True
        level = np.flatnonzero(seen)
        seen[level] = False
    loop = find_loop(kids, heads)
    if loop is not None:
        fail(f"{what} {loop} is below itself (a loop in the {what} tree)")
    fail(f"the {what} tree is more than {MAX_TREE_DEPTH} levels deep")


def find_loop(children: np.ndarray, heads: np.ndarray) -> int | None:
    """A node that a walk from ``heads`` meets again below itself, or None.

    Iterative depth-first search (no recursion limit), each node finished once: O(K).
    """
    kids = np.asarray(children, dtype=np.int64).tolist()
    state = [0] * len(kids)  # 0: not met, 1: on the current path, 2: finished
    for head in np.unique(heads).tolist():
        if state[head]:
            continue
        state[head] = 1
        stack = [(head, 0)]
        while stack:
            node, side = stack[-1]
            if side == 2:
                state[node] = 2
                stack.pop()
                continue
            stack[-1] = (node, side + 1)
            child = kids[node][side]
            if child < 0 or state[child] == 2:
                continue
            if state[child] == 1:
                return child
            state[child] = 1
            stack.append((child, 0))
    return None
