"""``sequential``: the original single-process event-driven QuakeWorld server (SPED).

One frame on one CPU, in ``SV_Frame``'s order [MODEL §8]: fixed frame work, world physics (when
``sv_mintic`` has passed), reading and executing the packets, the score and broadcast messages
to every connected client, building and sending the replies.
It has no options.
"""

from __future__ import annotations

from simsrv.core.strict_model import StrictModel
from simsrv.machine.plan import FramePlan, Thread
from simsrv.strategies.base import STRATEGIES, Strategy, StrategyKind
from simsrv.strategies.phases import frame_phases
from simsrv.workload.frame import FrameWorkload


class SequentialOptions(StrictModel):
    """The sequential server has no options."""


class Sequential(Strategy):
    """The whole frame on CPU 0."""

    def plan(self, frame: FrameWorkload) -> FramePlan:
        receiver_idle = self.context.scenario.clients.receiver_idle_share
        ops = frame_phases(self.cost_vector, frame, self.connected_clients, receiver_idle)
        return FramePlan((Thread("main", 0, ops),))


STRATEGIES.register("sequential", StrategyKind("sequential", SequentialOptions, Sequential))
