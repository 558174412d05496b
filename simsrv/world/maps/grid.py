"""A grid of rectangular rooms joined by doorways (optionally through corridors).

The layout shared by the ``rooms`` kind (and usable by any kind that needs rooms): ``rows x
cols`` rooms of ``room_size`` x ``room_size`` units, separated by solid walls ``gap`` units
thick.  Each pair of side-by-side rooms is joined by one doorway of ``door_width`` in the
middle of their shared wall.  With ``corridors``, the gap between rooms is a corridor: the
doorway becomes a ``door_width``-wide passage ``gap`` long, itself a room (for visibility and
routing) with a doorway at each end.

Visibility (the PVS proxy of [MODEL §1]): a room sees the rooms within ``visibility_hops``
doorways of it (1: itself and its neighbours through a door).  Symmetric by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GridLayout:
    """Solids, rooms, doorways and visibility of a room grid (arrays as in ``GameMap``)."""

    extent: np.ndarray
    solid_min: np.ndarray
    solid_max: np.ndarray
    room_min: np.ndarray
    room_max: np.ndarray
    room_visible: np.ndarray
    doors: np.ndarray
    door_rooms: np.ndarray
    room_centres: np.ndarray


def grid_layout(
    rows: int,
    cols: int,
    room_size: float,
    height: float,
    door_width: float,
    gap: float,
    corridors: bool = False,
    visibility_hops: int = 1,
) -> GridLayout:
    """Build the grid (see module docstring); room ``r * cols + c`` is row r, column c."""
    pitch = room_size + gap
    width, depth = cols * pitch - gap, rows * pitch - gap
    solids: list[tuple[tuple[float, ...], tuple[float, ...]]] = []
    rooms = [
        ((c * pitch, r * pitch, 0.0), (c * pitch + room_size, r * pitch + room_size, height))
        for r in range(rows)
        for c in range(cols)
    ]
    doors: list[tuple[float, float, float]] = []
    door_rooms: list[tuple[int, int]] = []
    half = door_width / 2

    def link(a: int, b: int, lo: tuple[float, float], hi: tuple[float, float]) -> None:
        """Join rooms a and b through the passage box lo-hi (x, y) in their wall."""
        centre = ((lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, 0.0)
        if not corridors:
            doors.append(centre)
            door_rooms.append((a, b))
            return
        corridor = len(rooms)
        rooms.append(((lo[0], lo[1], 0.0), (hi[0], hi[1], height)))
        vertical = hi[0] - lo[0] < hi[1] - lo[1]
        if vertical:  # passage along y
            ends = [(centre[0], lo[1], 0.0), (centre[0], hi[1], 0.0)]
        else:
            ends = [(lo[0], centre[1], 0.0), (hi[0], centre[1], 0.0)]
        doors.extend(ends)
        door_rooms.extend([(a, corridor), (corridor, b)])

    # vertical walls between columns c and c+1, one opening per row
    for c in range(cols - 1):
        x0 = c * pitch + room_size
        openings = []
        for r in range(rows):
            yc = r * pitch + room_size / 2
            openings.append((yc - half, yc + half))
            link(r * cols + c, r * cols + c + 1, (x0, yc - half), (x0 + gap, yc + half))
        for lo, hi in _spans(0.0, depth, openings):
            solids.append(((x0, lo, 0.0), (x0 + gap, hi, height)))
    # horizontal walls between rows r and r+1, one opening per column
    for r in range(rows - 1):
        y0 = r * pitch + room_size
        openings = []
        for c in range(cols):
            xc = c * pitch + room_size / 2
            openings.append((xc - half, xc + half))
            link(r * cols + c, (r + 1) * cols + c, (xc - half, y0), (xc + half, y0 + gap))
        for lo, hi in _spans(0.0, width, openings):
            solids.append(((lo, y0, 0.0), (hi, y0 + gap, height)))

    room = np.array(rooms, dtype=float).reshape(-1, 2, 3)
    solid = np.array(solids, dtype=float).reshape(-1, 2, 3)
    pairs = np.array(door_rooms, dtype=np.int64).reshape(-1, 2)
    n = len(room)
    from scipy.sparse import csr_matrix  # here: importing the map kinds skips scipy
    from scipy.sparse.csgraph import shortest_path

    graph = csr_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    hops = shortest_path(graph, directed=False, unweighted=True)
    return GridLayout(
        extent=np.array([width, depth, height]),
        solid_min=solid[:, 0],
        solid_max=solid[:, 1],
        room_min=room[:, 0],
        room_max=room[:, 1],
        room_visible=hops <= visibility_hops,
        doors=np.array(doors, dtype=float).reshape(-1, 3),
        door_rooms=pairs,
        room_centres=(room[: rows * cols, 0] + room[: rows * cols, 1]) / 2,
    )


def _spans(start: float, end: float, holes: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The solid parts of [start, end] once the sorted ``holes`` are cut out."""
    out, at = [], start
    for lo, hi in sorted(holes):
        if lo > at:
            out.append((at, lo))
        at = max(at, hi)
    if at < end:
        out.append((at, end))
    return out
