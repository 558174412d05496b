"""The server-frame phases every strategy charges, as machine operations.

A strategy decides *where* each phase runs and on *which share* of the frame; these builders
say *what* the phase costs (cost functions of :mod:`simsrv.strategies.costs`), so the same work
is charged the same way by every strategy.  The ``*_costs`` functions give those costs as
numbers (or arrays, one entry per process) for strategies that build their plans as arrays
(:mod:`simsrv.machine.plan_arrays`); the ``*_phase`` builders give them as operations.
"""

from __future__ import annotations

from simsrv.machine.plan import Compute
from simsrv.platforms.profile import Costs
from simsrv.strategies import costs as c
from simsrv.workload.frame import FrameWorkload


def input_costs(k: Costs, frame: FrameWorkload) -> tuple[float, float, float]:
    """The costs of :func:`input_phase`, us: ``frame``, ``world``, ``net_recv``."""
    return (
        k.frame_overhead,
        c.world_us(k, frame.entities) if frame.physics else 0.0,
        c.net_recv_us(k, len(frame.messages)),
    )


def input_phase(k: Costs, frame: FrameWorkload) -> list[Compute]:
    """Fixed frame work, world physics when due, and receiving every packet of the frame."""
    frame_us, world, net_recv = input_costs(k, frame)
    return [Compute("frame", frame_us), Compute("world", world), Compute("net_recv", net_recv)]


def reply_info_phase(k: Costs, connected: int) -> Compute:
    """Stage-3 part 1: score and broadcast messages to the ``connected`` clients (per frame)."""
    return Compute("reply_info", c.reply_info_us(k, connected))


def request_phase(k: Costs, messages, commands, range_entities, share=1.0) -> list[Compute]:
    """Executing ``messages`` packets (stage 2 after receiving); ``share`` of that work when
    part of it was done elsewhere (bsp-group's coordinator builds the action lists)."""
    return [Compute("request", share * c.request_us(k, messages, commands, range_entities))]


def reply_phase(k: Costs, replies, visible_entities, pvs_rooms) -> list[Compute]:
    """Building and sending ``replies`` replies (stage 3 part 2)."""
    return [
        Compute("reply", c.reply_us(k, replies, visible_entities, pvs_rooms)),
        Compute("net_send", c.net_send_us(k, replies)),
    ]


def request_reply_costs(
    k: Costs,
    messages,
    commands,
    range_entities,
    replies,
    visible_entities,
    pvs_rooms,
    request_share=1.0,
) -> tuple:
    """The costs, us, of executing ``messages`` packets (``request_share`` of that work, see
    :func:`request_phase`) and of building and sending ``replies`` replies: ``request``,
    ``reply``, ``net_send``, as :func:`request_phase` and :func:`reply_phase` charge them.
    Counts may be arrays (one entry per process, say): the costs are arrays then."""
    return (
        request_share * c.request_us(k, messages, commands, range_entities),
        c.reply_us(k, replies, visible_entities, pvs_rooms),
        c.net_send_us(k, replies),
    )
