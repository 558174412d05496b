"""``replay``: players that replay a few pre-recorded routes with time offsets.

[R §4.2]: "virtual players created from files containing pre-recorded moves were used to
simulate real players.  This is similar to the approach used by [AB04]."  Players replaying
the same recording follow the same path, so they meet in the same places: a recording shared
by many players concentrates them where a random-walk model spreads them out.

Model: ``routes`` recordings of ``route_s`` seconds are made once, when the players are
created, by running that many automated players (``quake-bot``, with its default schedule) on
the same map at ``record_hz`` ticks per second; each tick keeps their origins and actions.
Player ``i`` replays recording ``i mod routes`` from a time offset drawn uniformly in
``[0, max_offset_s)`` (0: every player of a recording starts at its beginning), looping: at
time ``t`` it is where the recording was at ``(t + offset) mod route_s``, rounded to the
nearest recorded tick, and does what the recorded player did at that tick.  At the end of a
recording a player jumps back to its start (a demo restarting).

Randomness: the recordings and the offsets each draw from their own stream, spawned from the
``players`` stream; nothing else is drawn after creation.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from simsrv.core.strict_model import StrictModel
from simsrv.core.uninitialised import empty
from simsrv.world.maps.base import GameMap
from simsrv.world.mobility.quake_bot import QuakeBot, QuakeBotParams
from simsrv.world.mobility.registry import MOBILITY_MODELS, MobilityKind, TickActions


class ReplayParams(StrictModel):
    """Recordings and how players replay them."""

    routes: int = Field(
        8,
        ge=1,
        le=10_000,
        description="recorded routes (each replayed by every routes-th player)",
    )
    route_s: float = Field(60.0, gt=0.0, le=3600.0, description="length of a recording, s")
    record_hz: float = Field(
        31.25, gt=0.0, le=1000.0, description="recorded ticks per second (client frames)"
    )
    max_offset_s: float = Field(
        60.0,
        ge=0.0,
        le=3600.0,
        description="players start their recording at a uniform offset below this, s "
        "(0: all at its start)",
    )


class Replay:
    """Players replaying recorded routes (see module docstring)."""

    def __init__(
        self,
        params: ReplayParams,
        game_map: GameMap,
        count: int,
        speed: float,
        rng: np.random.Generator,
    ) -> None:
        record_rng, offset_rng = rng.spawn(2)
        self.params = params
        self.ticks = max(1, round(params.route_s * params.record_hz))
        self.route_positions, self.route_actions = record_routes(
            game_map, params.routes, self.ticks, 1.0 / params.record_hz, speed, record_rng
        )
        self.route = np.arange(count) % params.routes
        self.offset_s = offset_rng.uniform(0.0, params.max_offset_s, count)
        self.time_s = 0.0
        self.positions = self._at(self.time_s)[0]

    def _at(self, time_s: float) -> tuple[np.ndarray, np.ndarray]:
        """Every player's origin (N, 3) and recorded tick index (N,) at ``time_s``."""
        index = np.rint((time_s + self.offset_s) * self.params.record_hz).astype(np.int64)
        index %= self.ticks
        return self.route_positions[self.route, index].copy(), index

    def step(self, dt_s: float) -> TickActions:
        """Advance ``dt_s`` seconds; the actions are those recorded at the reached tick."""
        self.time_s += dt_s
        self.positions, index = self._at(self.time_s)
        moving, shot, jumped = (a[self.route, index] for a in self.route_actions)
        return TickActions(moving=moving, shot=shot, jumped=jumped)


def record_routes(
    game_map: GameMap, routes: int, ticks: int, dt_s: float, speed: float, rng
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Record ``routes`` automated players for ``ticks`` ticks of ``dt_s``: their origins
    (routes, ticks, 3) and their actions (moving, shot, jumped), (routes, ticks) bool each."""
    bot = QuakeBot(QuakeBotParams(), game_map, routes, speed, rng)
    positions = empty((routes, ticks, 3))
    actions = tuple(np.zeros((routes, ticks), dtype=bool) for _ in range(3))
    positions[:, 0] = bot.positions
    for tick in range(1, ticks):
        done = bot.step(dt_s)
        positions[:, tick] = bot.positions
        for store, value in zip(actions, (done.moving, done.shot, done.jumped), strict=True):
            store[:, tick] = value
    return positions, actions


def create_replay(params, game_map, count, speed, rng) -> Replay:
    """Factory registered as ``replay``."""
    return Replay(params, game_map, count, speed, rng)


def recording_bytes(params: ReplayParams) -> tuple[int, str, str]:
    """The recordings' size (:func:`record_routes`: an origin, 3 float64, and three action
    flags per route and tick), bytes, and the field that sizes it."""
    ticks = max(1, round(params.route_s * params.record_hz))
    what = f"{params.routes:,} recorded routes of {ticks:,} ticks"
    return params.routes * ticks * (3 * 8 + 3), "routes", what


MOBILITY_MODELS.register(
    "replay", MobilityKind("replay", ReplayParams, create_replay, recording_bytes)
)
