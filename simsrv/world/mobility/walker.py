"""Waypoint walking shared by the destination-based mobility models.

Every player walks at its own speed towards a destination; when it arrives it pauses, then
the model chooses its next destination.  Routing: while the destination is in another room,
the player heads for the next doorway on the shortest doorway path
(``GameMap.room_next_door``), so players pass through doors instead of pressing on walls.
A step that would overlap a wall slides along it (x only, then y only); a player that cannot
move at all, or has slid for ``MAX_DETOUR_TICKS`` ticks in a row, gets a new destination.
Vertical motion (ledges, falls) is :func:`simsrv.world.mobility.physics.fall`.

A model subclasses :class:`Walker` and implements :meth:`Walker.destinations` (where players
``idx`` go next) and optionally :meth:`Walker.pauses` (how long they stay), both vectorised.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from simsrv.core.compiled import compiled, row_kernel
from simsrv.core.row_split import split_rows
from simsrv.core.strict_model import StrictModel
from simsrv.core.uninitialised import empty, poisoned_again
from simsrv.world.maps.base import GameMap
from simsrv.world.mobility.physics import _maximum, fall
from simsrv.world.mobility.registry import TickActions
from simsrv.world.spawn import floor_positions, spawn_positions

MAX_DETOUR_TICKS = 10
"""Ticks a walker slides along a wall before it gives up its destination (unreachable, e.g.
back up a ledge)."""
REDRAWS = 20
"""Redraws of a blocked destination before falling back to a uniform one."""


class WalkerParams(StrictModel):
    """Parameters every waypoint model shares."""

    min_speed_fraction: float = Field(
        0.5, gt=0.0, le=1.0, description="slowest walker, as a share of players.speed (> 0)"
    )
    max_pause_s: float = Field(2.0, ge=0.0, le=3600.0, description="longest pause at a waypoint")
    shot_rate_hz: float = Field(0.5, ge=0.0, le=100.0, description="shots per player per second")


class Walker:
    """Vectorised waypoint walkers (see module docstring)."""

    def __init__(
        self,
        params: WalkerParams,
        game_map: GameMap,
        count: int,
        speed: float,
        rng: np.random.Generator,
    ) -> None:
        self.params = params
        self.map = game_map
        self.rng = rng
        self.time_s = 0.0
        self.positions = self.start_positions(count)
        self.speed = speed * rng.uniform(params.min_speed_fraction, 1.0, count)
        self.vz = np.zeros(count)
        self.target = np.zeros((count, 2))
        self.pause_s = np.zeros(count)
        self.detour = np.zeros(count, dtype=np.int64)  # ticks spent sliding along a wall
        self._kept: dict[str, np.ndarray] = {}  # working arrays (:meth:`_working`)
        self._every_row = np.arange(count)  # 0 .. count - 1, never written
        everyone = np.arange(count)
        self.target[everyone] = self.destinations(everyone)

    # -- what a model decides -------------------------------------------------------------
    def start_positions(self, count: int) -> np.ndarray:
        """Initial origins, (count, 3); uniform free floor by default."""
        return spawn_positions(self.map, count, self.rng)

    def destinations(self, idx: np.ndarray) -> np.ndarray:
        """Next destinations (x, y) of players ``idx``, (len(idx), 2)."""
        raise NotImplementedError

    def pauses(self, idx: np.ndarray) -> np.ndarray:
        """Pause at the destination of players ``idx``, s; uniform up to ``max_pause_s``."""
        return self.rng.uniform(0.0, self.params.max_pause_s, len(idx))

    # -- shared motion --------------------------------------------------------------------
    def uniform_points(self, count: int) -> np.ndarray:
        """``count`` free floor points (x, y) spread over the map (``GameMap.floor_xy``)."""
        return floor_positions(self.map, count, self.rng)[:, :2]

    def free_points_near(self, centres: np.ndarray, half_side: np.ndarray) -> np.ndarray:
        """A free floor point in the box of ``half_side`` around each centre, (n, 2).

        Blocked candidates are redrawn (``REDRAWS`` times); a point whose box stays blocked
        (an attractor inside a wall) falls back to a uniform free point.
        """
        n = len(centres)
        half = np.broadcast_to(np.asarray(half_side, dtype=float), (n,))[:, None]
        out = centres[:, :2] + self.rng.uniform(-1.0, 1.0, size=(n, 2)) * half
        bad = ~self.free(out)
        for _ in range(REDRAWS):
            if not bad.any():
                return out
            k = int(bad.sum())
            out[bad] = centres[bad, :2] + self.rng.uniform(-1.0, 1.0, size=(k, 2)) * half[bad]
            bad[bad] = ~self.free(out[bad])
        if bad.any():
            out[bad] = self.uniform_points(int(bad.sum()))
        return out

    def free(self, xy: np.ndarray) -> np.ndarray:
        """Whether a player can stand at each (x, y), (n,) bool."""
        return ~self.map.blocked(self.map.standing_at(xy))

    def step(self, dt_s: float) -> TickActions:
        """Advance one client tick of ``dt_s`` seconds; return the tick's actions."""
        n = len(self.speed)
        self.time_s += dt_s
        resume, walking = (
            self._working("resume", n, np.int64),
            self._working("walking", n, np.int64),
        )
        resumed, walkers = _pauses(self.pause_s, dt_s, self.pause_s, resume, walking)
        resume = resume[:resumed].copy()
        if len(resume):
            self.target[resume] = self.destinations(resume)
        moved = self._walk(walking[:walkers], dt_s)
        self.vz, self.positions[:, 2] = fall(self.map, self.positions, self.vz, dt_s)
        shot = self.rng.random(n) < self.params.shot_rate_hz * dt_s
        return TickActions(moving=moved, shot=shot, jumped=np.zeros(n, dtype=bool))

    def _working(self, name: str, shape: int | tuple[int, ...], dtype: type = np.float64):
        """A working array of ``shape`` for one step, written before it is read: the first
        rows of one kept between steps, grown when too small.
        A step's working arrays are a million players' tens of MB: allocated afresh each
        step, their pages would be mapped again each time (a seventh of a settling walk's time).
        In poison mode a reused array is poisoned again, as a new one is."""
        rows = shape if isinstance(shape, int) else shape[0]
        kept = self._kept.get(name)
        if kept is not None and len(kept) >= rows:
            poisoned_again(kept)
        else:
            full_shape = (
                max(rows, len(self.speed)),
                *(() if isinstance(shape, int) else shape[1:]),
            )
            kept = self._kept[name] = empty(full_shape, dtype)
        return kept[:rows]

    def _waypoints(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where players ``idx`` head now: the next doorway, or the destination itself, as
        ``(way, rows)``: player ``idx[r]`` heads for ``way[rows[r]]`` (maps without doorways:
        the destinations themselves, not copied).

        A player standing in a doorway (within 1 unit of its centre) heads for the doorway
        after it on the path from the room on the other side, or for the destination.
        """
        if len(self.map.doors) == 0:
            return self.target, idx
        way = self.target[idx]
        pos = self.positions[idx]
        here = self.map.room_of(pos)
        goal = self.map.room_of(np.column_stack([way, pos[:, 2]]))
        door = self._next_door(here, goal)
        at_door = (door >= 0) & (np.hypot(*(self.map.doors[door, :2] - pos[:, :2]).T) < 1.0)
        if at_door.any():
            beyond = self.map.door_rooms[door[at_door]]
            other = np.where(beyond[:, 0] == here[at_door], beyond[:, 1], beyond[:, 0])
            door[at_door] = self._next_door(other, goal[at_door])
        through = door >= 0
        way[through] = self.map.doors[door[through], :2]
        return way, np.arange(len(idx))

    def _next_door(self, here: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """Next doorway from room ``here`` to room ``goal`` (-1: none needed or known)."""
        door = np.full(len(here), -1)
        ok = (here >= 0) & (goal >= 0) & (here != goal)
        door[ok] = self.map.room_next_door[here[ok], goal[ok]]
        return door

    def _walk(self, idx: np.ndarray, dt_s: float) -> np.ndarray:
        """Move players ``idx`` (ascending) one step towards their waypoints; slide along walls.

        A step is tried whole, then along x only, then along y only (the slides only for
        those not moved yet); the arithmetic is compiled (:func:`_steps`, :func:`_try`,
        :func:`_next_attempt`, :func:`_arrivals`; the per-player ones on every core,
        :func:`~simsrv.core.row_split.split_rows`), the map answers which proposals are
        blocked.  Returns who moved, (N,) bool.
        """
        moved = np.zeros(len(self.speed), dtype=bool)
        if len(idx) == 0:
            return moved
        way, way_rows = self._waypoints(idx)
        n = len(idx)
        full, proposal = self._working("full", (n, 2)), self._working("proposal", (n, 3))
        split_rows(_steps, n, self.positions, idx, way, way_rows, self.speed, dt_s, full, proposal)
        rows = self._every_row[:n]  # read only
        positions, detour = self.positions, self.detour
        start = np.zeros((0, 3))  # the whole step starts where the players are
        for axis in (-1, 0, 1):  # whole step, then the slides along x and along y
            free = ~self.map.blocked(proposal)
            stay = empty(len(rows), np.bool_)
            split_rows(
                _try, len(rows), positions, moved, detour, idx, rows, full, proposal, free,
                axis, stay,
            )  # fmt: skip
            rows, start, proposal = _next_attempt(rows, full, start, proposal, axis, stay)
            if len(rows) == 0:
                break
        at_goal, stuck = empty(n, np.bool_), empty(n, np.bool_)
        split_rows(
            _arrivals, n, self.positions, self.target, moved, self.detour, idx, at_goal, stuck
        )
        arrived = idx[at_goal]
        if len(arrived):
            self.pause_s[arrived] = np.maximum(self.pauses(arrived), 1e-9)
        if stuck.any():
            self.target[idx[stuck]] = self.destinations(idx[stuck])
            self.detour[idx[stuck]] = 0
        return moved


@compiled
def _pauses(pause_s, dt_s, left, resume, walking):  # pragma: no cover - compiled
    """One tick of the pauses ``pause_s`` (s): what is left of each after ``dt_s`` (never
    below 0), to ``left``; the players whose pause ends in this tick, to the start of
    ``resume``; those not paused at its start (they walk), to the start of ``walking``; both
    in index order.  Returns how many resume and how many walk."""
    resumed, walkers = 0, 0
    for i in range(len(pause_s)):
        p = pause_s[i]
        q = _maximum(p - dt_s, 0.0)
        left[i] = q
        if p > 0.0:
            if q == 0.0:
                resume[resumed] = i
                resumed += 1
        else:
            walking[walkers] = i
            walkers += 1
    return resumed, walkers


@row_kernel
def _steps(lo, hi, positions, idx, way, way_rows, speed, dt_s, full, proposal):  # pragma: no cover
    """The whole steps of players ``idx[lo:hi]`` towards their waypoints ``way[way_rows]``
    (``speed * dt_s`` units, at most the distance to the waypoint), to rows ``lo .. hi`` of
    ``full`` (n, 2), and where they lead, to those of ``proposal`` (n, 3)."""
    for r in range(lo, hi):
        i = idx[r]
        dx = way[way_rows[r], 0] - positions[i, 0]
        dy = way[way_rows[r], 1] - positions[i, 1]
        dist = np.hypot(dx, dy)
        step = min(speed[i] * dt_s, dist)
        norm = max(dist, 1e-9)
        full[r, 0] = dx / norm * step
        full[r, 1] = dy / norm * step
        proposal[r, 0] = positions[i, 0] + full[r, 0]
        proposal[r, 1] = positions[i, 1] + full[r, 1]
        proposal[r, 2] = positions[i, 2]


@row_kernel
def _try(
    lo, hi, positions, moved, detour, idx, rows, full, proposal, free, axis, stay
):  # pragma: no cover - compiled
    """Apply one attempt (``axis`` -1: the whole step ``full``, 0 or 1: its x or y part only)
    to the players ``idx[rows[lo:hi]]``: those whose ``proposal`` is ``free`` move there
    (``moved`` if the move is not zero); the whole step also counts the ``detour`` ticks (0
    when free).  The whole step starts at ``positions``: its tested ``proposal`` rows are
    overwritten with those starts, to keep them.  ``stay``: whether each row's player has not
    moved (it tries the next attempt)."""
    for q in range(lo, hi):
        r = rows[q]
        i = idx[r]
        if axis == -1:  # keep the start of the slides (the position before the whole step)
            for k in range(3):
                proposal[q, k] = positions[i, k]
            if free[q]:  # the whole step: start + full
                positions[i, 0] = proposal[q, 0] + full[r, 0]
                positions[i, 1] = proposal[q, 1] + full[r, 1]
                moved[i] = full[r, 0] != 0.0 or full[r, 1] != 0.0
            detour[i] = 0 if free[q] else detour[i] + 1
        elif free[q]:
            positions[i, 0] = proposal[q, 0]
            positions[i, 1] = proposal[q, 1]
            moved[i] = full[r, axis] != 0.0
        stay[q] = not moved[i]


@compiled
def _next_attempt(rows, full, start, proposal, axis, stay):  # pragma: no cover - compiled
    """After the attempt ``axis`` (:func:`_try`): the rows whose player stays, their starts
    (``start``; after the whole step, its kept starts in ``proposal``) and their next
    proposals (the x slide after the whole step, the y slide after the x slide)."""
    kept = 0
    for q in range(len(rows)):
        kept += stay[q]
    nxt = empty(kept, np.int64)
    starts = empty((kept, 3))
    proposals = empty((kept, 3))
    p = 0
    for q in range(len(rows)):
        if not stay[q]:
            continue
        r = rows[q]
        nxt[p] = r
        for k in range(3):
            starts[p, k] = proposal[q, k] if axis == -1 else start[q, k]
        proposals[p, 2] = starts[p, 2]
        if axis == -1:  # the x slide: (full x, 0)
            proposals[p, 0] = starts[p, 0] + full[r, 0]
            proposals[p, 1] = starts[p, 1] + 0.0
        else:  # the y slide: (0, full y)
            proposals[p, 0] = starts[p, 0] + 0.0
            proposals[p, 1] = starts[p, 1] + full[r, 1]
        p += 1
    return nxt, starts, proposals


@row_kernel
def _arrivals(lo, hi, positions, target, moved, detour, idx, at_goal, stuck):  # pragma: no cover
    """Per player of ``idx[lo:hi]``: at its destination (within 1 unit), to ``at_goal``, and
    stuck (not moved, or ``MAX_DETOUR_TICKS`` ticks sliding, away from its destination), to
    ``stuck``; rows ``lo .. hi`` of (n,) bool each."""
    for r in range(lo, hi):
        i = idx[r]
        dx = target[i, 0] - positions[i, 0]
        dy = target[i, 1] - positions[i, 1]
        # hypot >= max(|dx|, |dy|) (faithfully rounded): far players skip it
        at_goal[r] = abs(dx) < 1.0 and abs(dy) < 1.0 and np.hypot(dx, dy) < 1.0
        stuck[r] = (not moved[i] or detour[i] >= MAX_DETOUR_TICKS) and not at_goal[r]
