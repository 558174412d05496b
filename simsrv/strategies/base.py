"""The strategy interface and registry.

A strategy turns one frame's workload into a :class:`~simsrv.machine.plan.FramePlan`.  It is a
module that defines an options model (validated from ``[server.options]``) and a class with
``plan(frame) -> FramePlan``, and registers both under a name with :data:`STRATEGIES`.  The frame
loop never branches on strategy names.

Override points of :class:`Strategy`
------------------------------------
``plan(frame)``          required: the plan of one frame.
``frame_record()``       optional: extra per-frame columns (name -> value) for the frame just
                         planned; they are appended to the run's per-frame records.
``check_invariants()``   optional: raise :class:`~simsrv.invariants.InvariantViolation` if the
                         frames planned broke an invariant (called once, at the end of a run).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel

from simsrv.machine.plan import FramePlan
from simsrv.platforms.profile import Platform
from simsrv.registry import Registry
from simsrv.scenario.schema import Scenario
from simsrv.workload.frame import FrameWorkload
from simsrv.world.world import World


@dataclass(frozen=True)
class StrategyContext:
    """What a strategy may consult besides the frame: the machine, costs, world and its rng."""

    scenario: Scenario
    platform: Platform
    cpus: int
    world: World
    rng: np.random.Generator


class Strategy:
    """Base class of server strategies (see the module docstring for override points)."""

    connected: int | None = None
    """Clients whose scores and broadcasts the frame's stage 3 covers, if not every player
    (a cluster node sets it before each plan: the players it serves plus those mirrored onto
    it, docs/cluster.md)."""

    @property
    def connected_clients(self) -> int:
        """:attr:`connected`, else ``players.count`` (a single server: every player)."""
        return self.context.scenario.players.count if self.connected is None else self.connected

    def __init__(self, options: BaseModel, context: StrategyContext) -> None:
        self.options = options
        self.context = context
        self.costs = context.platform.costs

    def plan(self, frame: FrameWorkload) -> FramePlan:
        """The plan of one frame."""
        raise NotImplementedError

    def frame_record(self) -> dict[str, Any]:
        """Extra per-frame values (e.g. group statistics) for the frame just planned."""
        return {}

    def check_invariants(self) -> None:
        """The strategy's own invariants over the run (e.g. ``entity_partition``)."""


@dataclass(frozen=True)
class StrategyKind:
    """A registered strategy: its options model and its class."""

    name: str
    options: type[BaseModel]
    create: Callable[[BaseModel, StrategyContext], Strategy]


STRATEGIES: Registry[StrategyKind] = Registry("strategy")
