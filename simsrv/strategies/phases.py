"""The server-frame phases a frame on one CPU charges, as machine operations.

A strategy decides *where* each phase runs and on *which share* of the frame; the cost
functions of :mod:`simsrv.strategies.costs` say *what* a phase costs, so the same work is
charged the same way by every strategy.  :func:`frame_costs` gives a frame's costs (one
compiled call), :func:`frame_phases` the frame as operations in ``SV_Frame``'s order.
"""

from __future__ import annotations

import numpy as np

from simsrv.machine.plan import Compute
from simsrv.strategies import costs as c
from simsrv.strategies.costs import FrameCosts
from simsrv.workload.frame import FrameWorkload


def frame_costs(
    k: np.ndarray, frame: FrameWorkload, connected: int, receiver_idle: float = 0.0
) -> FrameCosts:
    """The costs of ``frame`` run on one CPU, us (:func:`simsrv.strategies.costs.frame_costs`
    of its counts, from the cost vector ``k``), with ``connected`` clients getting the scores
    and broadcasts and the replies' receiver asleep with probability ``receiver_idle``
    (``clients.receiver_idle_share``)."""
    return c.frame_costs(
        k, frame.physics, frame.entities, len(frame.messages), frame.commands,
        frame.range_entities, connected, len(frame.reply_clients), frame.visible_entities,
        frame.pvs_rooms, receiver_idle,
    )  # fmt: skip


def frame_phases(
    k: np.ndarray, frame: FrameWorkload, connected: int, receiver_idle: float = 0.0
) -> tuple[Compute, ...]:
    """The whole of ``frame`` as computations, in ``SV_Frame``'s order [MODEL §8]: fixed frame
    work, world physics (0 us when not due), receiving and executing every packet, the scores
    and broadcasts to the ``connected`` clients, building and sending the replies (waking
    their receiver, asleep with probability ``receiver_idle``)."""
    costs = frame_costs(k, frame, connected, receiver_idle)
    return tuple(map(Compute, FrameCosts._fields, costs))
