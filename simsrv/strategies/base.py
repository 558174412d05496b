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
``check_invariants()``   optional: raise :class:`~simsrv.machine.invariants.InvariantViolation` if
                         the frames planned broke an invariant (called once, at the end of a run).
``frame_kernel(ticks)``  optional, with ``has_frame_kernel = True``: the strategy's compiled
                         frame loop (:class:`FrameKernel`), which runs many frames per call with
                         the same compiled planning function as ``plan`` (one implementation;
                         :mod:`simsrv.frame_steps`).

A strategy whose planner is one compiled function subclasses :class:`CompiledPlanner`: it
gives the function and its arguments, and gets ``plan`` and the compiled frame loop from them
(``docs/howto.md`` builds one).  A plain-Python ``plan`` returning a readable
:class:`~simsrv.machine.plan.FramePlan` works too (for prototyping): the machine converts it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from pydantic import BaseModel

from simsrv.core.registry import Registry
from simsrv.machine.plan import FramePlan
from simsrv.machine.plan_arrays import PlanArrays
from simsrv.platforms.profile import Platform
from simsrv.scenario.schema import Scenario
from simsrv.strategies.costs import cost_vector, with_scanned_entities
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


class FrameKernel(NamedTuple):
    """A strategy's compiled frame loop, ready for one call.

    ``run(loop, *args, records)`` runs frames with the steps of
    :mod:`simsrv.frame_steps.kernels` and the strategy's compiled planning function, writes
    each frame's :meth:`Strategy.frame_record` values (in
    :attr:`Strategy.frame_record_names` order) at the frame's row of ``records`` (the run's
    :attr:`FrameTable.extra <simsrv.workload.frame_table.FrameTable.extra>`), and returns the reason
    it stopped (:mod:`simsrv.frame_steps.state`).  ``plan_names`` is an empty plan carrying the
    names every plan of the strategy has (threads, activities, barriers, locks).
    """

    run: Callable[..., int]
    args: tuple
    plan_names: PlanArrays


class Strategy:
    """Base class of server strategies (see the module docstring for override points)."""

    has_frame_kernel = False
    """Whether :meth:`frame_kernel` may give a compiled frame loop."""
    frame_record_names: tuple[str, ...] | None = None
    """The names of :meth:`frame_record`'s values when they are integers named up front (a
    strategy with a compiled loop, which writes them as integer columns)."""

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
        """The platform's costs, with the scan of the entity list in the per-reply cost."""
        if self.costs.reply_per_scanned_entity:
            scanned = context.scenario.server.scanned_entities or context.world.entity_count
            self.costs = with_scanned_entities(self.costs, scanned)
        self.cost_vector = cost_vector(self.costs)
        """:attr:`costs` as the cost functions read them (:mod:`simsrv.strategies.costs`)."""

    def plan(self, frame: FrameWorkload) -> FramePlan:
        """The plan of one frame."""
        raise NotImplementedError

    def frame_record(self) -> dict[str, Any]:
        """Extra per-frame values (e.g. group statistics) for the frame just planned."""
        return {}

    def check_invariants(self) -> None:
        """The strategy's own invariants over the run (e.g. ``entity_partition``)."""

    def frame_kernel(self, ticks: np.ndarray) -> FrameKernel | None:
        """The compiled frame loop for frames whose packets carry ``ticks`` (client ticks: the
        strategy loads what it needs per tick), or None (the Python loop runs the frames)."""
        return None


class CompiledPlanner(Strategy):
    """A strategy planned by one compiled function, in Python and in the compiled frame loop.

    Subclasses set :attr:`planner` (``staticmethod`` of a :func:`~simsrv.core.compiled.compiled`
    function), :attr:`plan_names` and, optionally, :attr:`frame_record_names`, and define
    :meth:`planner_args`.  ``planner(frame, args)`` takes the frame
    (:class:`~simsrv.workload.frame.FrameWorkload`) and returns ``(thread, kind, cost, arg,
    activity, record, complete)``: the plan's operation columns
    (:mod:`simsrv.machine.plan_arrays`), the frame's values of the strategy's columns (an int64
    array in :attr:`frame_record_names` order) and True (False: it cannot plan this frame in
    compiled code before :meth:`prepare` has run)."""

    has_frame_kernel = True
    planner: Callable[..., tuple]
    plan_names: tuple = ()
    """The plan's fields after its operation columns (:class:`PlanArrays` order: thread CPUs,
    thread names, activities, barrier names, barrier parties, locks)."""

    def planner_args(self) -> tuple:
        """The planner's second argument (costs, options, tables), for the frames to come."""
        raise NotImplementedError

    def prepare(self, frame: FrameWorkload) -> None:
        """Make the planner able to plan ``frame`` (e.g. load a table it needs)."""

    def plan(self, frame: FrameWorkload) -> PlanArrays:
        while True:
            thread, kind, cost, arg, activity, record, complete = self.planner(
                frame, self.planner_args()
            )
            if complete:
                break
            self.prepare(frame)
        self._record = dict(zip(self.frame_record_names or (), record.tolist(), strict=True))
        return PlanArrays(thread, kind, cost, arg, activity, *self.plan_names)

    def frame_record(self) -> dict[str, Any]:
        return getattr(self, "_record", {})

    def frame_kernel(self, ticks: np.ndarray) -> FrameKernel | None:
        from simsrv.frame_steps.kernels import strategy_frames  # (the loop imports this)

        args = (self.planner, self.planner_args())
        return FrameKernel(strategy_frames, args, PlanArrays.names_only(*self.plan_names))


@dataclass(frozen=True)
class StrategyKind:
    """A registered strategy: its options model and its class."""

    name: str
    options: type[BaseModel]
    create: Callable[[BaseModel, StrategyContext], Strategy]


STRATEGIES: Registry[StrategyKind] = Registry("strategy")
