"""Snapshots of the world for pictures: positions, BSP groups and attractors at chosen times."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simsrv.pipeline.seeding import run_streams
from simsrv.scenario.schema import Scenario
from simsrv.strategies.grouping.groups import FrameGroups, frame_groups
from simsrv.world.maps.base import GameMap
from simsrv.world.proximity import Neighbours


@dataclass(frozen=True)
class Snapshot:
    """The world at one client tick.

    Attributes
    ----------
    time_s:
        Simulated time of the tick, s.
    positions:
        (N, 3) player origins, units.
    group:
        (N,) BSP group of each player in a frame where the players ``active`` sent a packet
        (the BSP-group grouping of :func:`simsrv.strategies.grouping.groups.frame_groups`, groups
        numbered by their smallest entity); -1 for players in no group.
    active:
        (N,) bool, the players that sent a packet in that frame.
    attractors:
        (A, 3) concentration-area centres at that time (moving areas move), units.
    groups:
        The frame's groups and interaction graph (:class:`FrameGroups`; entity ids at and
        above the player count are map entities), or None.
    """

    time_s: float
    positions: np.ndarray
    group: np.ndarray
    active: np.ndarray
    attractors: np.ndarray
    groups: FrameGroups | None = None


def active_groups(neighbours: Neighbours, active: np.ndarray) -> FrameGroups:
    """The frame's groups when the players ``active`` send (one tick's action-range lists)."""
    senders = np.flatnonzero(active)
    return frame_groups(senders, np.zeros(len(senders), dtype=np.int64), lambda _: neighbours)


def player_groups(neighbours: Neighbours, active: np.ndarray) -> np.ndarray:
    """BSP group of each player when the players ``active`` send (-1: in no group), (N,) int."""
    return _per_player(active_groups(neighbours, active), len(active))


def _per_player(groups: FrameGroups, players: int) -> np.ndarray:
    """Each player's group in ``groups`` (-1: in none), (players,) int."""
    out = np.full(players, -1, dtype=np.int64)
    is_player = groups.entities < players
    out[groups.entities[is_player]] = groups.entity_group[is_player]
    return out


def snapshots(
    scenario: Scenario, times_s: list[float], active_share: float
) -> tuple[GameMap, list[Snapshot]]:
    """Advance the scenario's world (its seed, its players) and take snapshots at ``times_s``.

    In each snapshot a share ``active_share`` of the players (drawn from a stream of its own,
    seeded by the scenario) counts as having sent a packet in the frame.

    Tick k is at ``k / clients.rate_hz`` s; a snapshot is the first tick at or after its time.
    """
    from simsrv.pipeline.simulation import build_world  # the run's own world construction

    world = build_world(scenario, run_streams(scenario.run))
    draw = np.random.default_rng(np.random.SeedSequence(scenario.run.seed).spawn(8)[-1])
    dt = 1.0 / scenario.clients.rate_hz
    out: list[Snapshot] = []
    for t in sorted(times_s):
        while True:
            state = world.advance(dt)
            now = state.tick * dt
            if now >= t - 1e-9:
                break
        areas = world.map.attractors
        active = draw.random(world.players) < active_share
        groups = active_groups(state.neighbours, active)
        out.append(
            Snapshot(
                time_s=now,
                positions=state.positions,
                group=_per_player(groups, world.players),
                active=active,
                attractors=areas.at(now, world.map.extent_min, world.map.extent_max),
                groups=groups,
            )
        )
    return world.map, out
