"""The automated Quake player of Cordeiro et al. [P §5, T §4.1].

The paper: "Every ten client frames, the player starts to walk.  After five client frames, the
player chooses randomly one action event (jump, gun shot, change direction).  After five more
client frames, the client stops, and the procedure is repeated."

Our reading, as a cycle of ``idle_ticks + walk_before_action + walk_after_action`` client ticks
(10 + 5 + 5 = 20 by default): the player stands for ten ticks, walks five, performs one action
drawn uniformly from {jump, shot, change direction}, walks five more and stops.  Each player
starts at a random point of the cycle (seeded), so players are not synchronised.

Concentration areas (maps with attractors): with probability ``attraction`` a new direction
(a *change direction* action, or a turn after bumping into a wall) points at a uniform random
point of the nearest concentration area instead of a uniform random yaw, and a player starts
inside a random concentration area instead of anywhere on the map.

Movement: at ``speed`` units/s along the current yaw on the floor; a move whose end position
overlaps a wall or leaves the map is rejected (the player stays) and the player turns to a new
random yaw.  A jump gives an upward velocity of 270 units/s under gravity 800 units/s^2
(QuakeWorld's values); a shot is an event only (hitscan: it creates no entity).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from simsrv.core.compiled import compiled
from simsrv.core.strict_model import StrictModel
from simsrv.core.uninitialised import empty
from simsrv.world.maps.base import GameMap
from simsrv.world.mobility.physics import fall
from simsrv.world.mobility.registry import MOBILITY_MODELS, MobilityKind, TickActions
from simsrv.world.spawn import free_floor_positions, spawn_positions

JUMP_VELOCITY = 270.0
"""Initial upward speed of a jump, units/s (QuakeWorld ``PM_PlayerMove``)."""

ACTION_JUMP, ACTION_SHOT, ACTION_TURN = 0, 1, 2


class QuakeBotParams(StrictModel):
    """Schedule of the automated player, in client ticks (client frames)."""

    idle_ticks: int = Field(10, ge=0, le=10_000, description="ticks standing before walking")
    walk_before_action: int = Field(5, ge=0, le=10_000, description="ticks walking before action")
    walk_after_action: int = Field(5, ge=0, le=10_000, description="ticks walking after action")
    attraction: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="chance that a new direction heads for the nearest concentration area "
        "(and that a player starts inside one); 0 on maps without attractors",
    )


class QuakeBot:
    """Vectorised state machine of N automated players (see module docstring)."""

    def __init__(
        self,
        params: QuakeBotParams,
        game_map: GameMap,
        count: int,
        speed: float,
        rng: np.random.Generator,
    ) -> None:
        self.params = params
        self.map = game_map
        self.speed = speed
        self.rng = rng
        self.cycle = params.idle_ticks + params.walk_before_action + params.walk_after_action
        self.attraction = params.attraction if len(game_map.attractors) else 0.0
        self.positions = spawn_positions(game_map, count, rng)
        if self.attraction:
            inside = rng.random(count) < self.attraction
            self.positions[inside] = _near_attractors(game_map, int(inside.sum()), rng)
        self.yaw = rng.uniform(0.0, 2 * np.pi, count)
        self.vz = np.zeros(count)
        self.tick = rng.integers(0, max(self.cycle, 1), count)

    def step(self, dt_s: float) -> TickActions:
        """Advance one client tick of ``dt_s`` seconds; return the tick's actions."""
        p = self.params
        drawn = self.rng.integers(0, 3, len(self.yaw))  # every player's action, if it acts
        walking, turn, shot, jumped = _schedule(
            self.tick,
            max(self.cycle, 1),
            p.idle_ticks,
            p.idle_ticks + p.walk_before_action,
            drawn,
            self.vz,
            JUMP_VELOCITY,
        )
        self._turn(turn)
        self._move(walking, dt_s)
        return TickActions(moving=walking, shot=shot, jumped=jumped)

    def _move(self, walking: np.ndarray, dt_s: float) -> None:
        proposal = _proposals(
            self.positions, self.speed * dt_s, walking, np.cos(self.yaw), np.sin(self.yaw)
        )
        blocked = self.map.blocked(proposal)
        accepted = ~blocked
        self.positions[accepted, :2] = proposal[accepted, :2]
        self._turn(blocked)
        self._fall(dt_s)

    def _turn(self, who: np.ndarray) -> None:
        """New directions for players ``who``: random, or towards a concentration area."""
        count = int(who.sum())
        if count == 0:
            return
        yaw = self.rng.uniform(0.0, 2 * np.pi, count)
        if self.attraction:
            attracted = self.rng.random(count) < self.attraction
            if attracted.any():
                here = self.positions[who][attracted]
                targets = _target_points(self.map, here, self.rng)
                delta = targets - here[:, :2]
                yaw[attracted] = np.arctan2(delta[:, 1], delta[:, 0])
        self.yaw[who] = yaw

    def _fall(self, dt_s: float) -> None:
        self.vz, self.positions[:, 2] = fall(self.map, self.positions, self.vz, dt_s)


def _target_points(game_map: GameMap, here: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniform point of the concentration area nearest to each position, (n, 2)."""
    areas = game_map.attractors
    return areas.points_in(areas.nearest(here), rng)


def _near_attractors(game_map: GameMap, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` free floor origins inside concentration areas chosen by weight."""

    def sample_xy(n: int) -> np.ndarray:
        areas = game_map.attractors
        return areas.points_in(areas.choose(n, rng), rng)

    return free_floor_positions(game_map, count, sample_xy, "positions in concentration areas")


@compiled
def _schedule(tick, cycle, idle, act_at, drawn, vz, jump_velocity):  # pragma: no cover
    """One tick of the cycle of each player (its ``tick``, advanced by one): whether it walks,
    and its action (``drawn``, at ``act_at`` ticks into the cycle): a turn, a shot or a jump
    (from the ground only: it sets ``vz`` to ``jump_velocity``); (N,) bool each."""
    n = len(tick)
    walking = empty(n, np.bool_)
    turn = np.zeros(n, np.bool_)
    shot = np.zeros(n, np.bool_)
    jumped = np.zeros(n, np.bool_)
    for i in range(n):
        phase = tick[i] % cycle
        walking[i] = phase >= idle
        if phase == act_at:
            turn[i] = drawn[i] == ACTION_TURN
            shot[i] = drawn[i] == ACTION_SHOT
            if drawn[i] == ACTION_JUMP and vz[i] == 0.0:
                jumped[i] = True
                vz[i] = jump_velocity
        tick[i] += 1
    return walking, turn, shot, jumped


@compiled
def _proposals(positions, step, walking, cos, sin):  # pragma: no cover - compiled
    """Where each player would be after ``step`` units (0 if not ``walking``) along its yaw
    (``cos``, ``sin`` of it), (N, 3)."""
    proposal = positions.copy()
    for i in range(len(positions)):
        move = step * (1.0 if walking[i] else 0.0)
        proposal[i, 0] += move * cos[i]
        proposal[i, 1] += move * sin[i]
    return proposal


def create_quake_bot(params, game_map, count, speed, rng) -> QuakeBot:
    """Factory registered as ``quake-bot``."""
    return QuakeBot(params, game_map, count, speed, rng)


MOBILITY_MODELS.register("quake-bot", MobilityKind("quake-bot", QuakeBotParams, create_quake_bot))
