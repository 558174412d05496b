"""``sequential``: the original single-process event-driven QuakeWorld server (SPED).

One frame on one CPU, in ``SV_Frame``'s order [MODEL §8]: fixed frame work, world physics (when
``sv_mintic`` has passed), reading and executing the packets, building and sending the replies.
It has no options.
"""

from __future__ import annotations

from simsrv.machine.plan import Compute, FramePlan, Thread
from simsrv.scenario.validation import StrictModel
from simsrv.strategies import costs as c
from simsrv.strategies.base import STRATEGIES, Strategy, StrategyKind
from simsrv.workload.frame import FrameWorkload


class SequentialOptions(StrictModel):
    """The sequential server has no options."""


class Sequential(Strategy):
    """The whole frame on CPU 0."""

    def plan(self, frame: FrameWorkload) -> FramePlan:
        k = self.costs
        messages, replies = len(frame.messages), len(frame.reply_clients)
        ops = (
            Compute("frame", k.frame_overhead),
            Compute("world", c.world_us(k, frame.entities) if frame.physics else 0.0),
            Compute("net_recv", c.net_recv_us(k, messages)),
            Compute("request", c.request_us(k, messages, frame.commands, frame.range_entities)),
            Compute("reply", c.reply_us(k, replies, frame.visible_entities)),
            Compute("net_send", c.net_send_us(k, replies)),
        )
        return FramePlan((Thread("main", 0, ops),))


STRATEGIES.register("sequential", StrategyKind("sequential", SequentialOptions, Sequential))
