"""One server frame's workload, as the strategies see it, and the memory of the rules that
build it.

The QuakeWorld frame rules, the same for every strategy [MODEL §1, §8], are applied by the
frame loop's compiled step :func:`simsrv.frame_steps.kernels.build` (written once, for every
server and cluster node):

* a frame reads at most ``max_messages_per_frame`` packets from the socket;
* world physics runs when at least ``sv_mintic`` has passed since it last ran (``SV_Physics``);
* a packet executes the commands the server has not seen yet: 1 normally, up to
  ``commands_per_packet`` after lost or dropped packets (QuakeWorld's redundancy);
* replies go to the clients whose packets were processed (one reply per client), unless the
  client's rate limit holds it (a choke).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from simsrv.scenario.schema import Scenario
from simsrv.workload.bandwidth import BandwidthControl


class FrameWorkload(NamedTuple):
    """Everything a strategy needs to plan one frame.

    Attributes
    ----------
    index:
        Frame number, from 0.
    start_s:
        When the frame starts, s.
    messages:
        Packets read this frame, in read order (structured array, see
        :mod:`simsrv.workload.messages`), with ``commands`` filled in.
    reply_clients:
        Clients that get a reply this frame (unique).
    reply_visible:
        Entities in each replied client's visible set (aligned with ``reply_clients``).
    reply_pvs_rooms:
        Rooms in each replied client's PVS row (aligned with ``reply_clients``).
    choked:
        Replies held back by the rate limit.
    physics:
        Whether world physics runs this frame.
    entities:
        Entities world physics simulates (players + map entities).
    commands:
        User commands executed this frame (sum over ``messages``).
    range_entities:
        Sum of the action-range counts of ``messages``.
    visible_entities:
        Sum of ``reply_visible``.
    pvs_rooms:
        Sum of ``reply_pvs_rooms``.
    """

    index: int
    start_s: float
    messages: np.ndarray
    reply_clients: np.ndarray
    reply_visible: np.ndarray
    reply_pvs_rooms: np.ndarray
    choked: int
    physics: bool
    entities: int
    commands: int
    range_entities: int
    visible_entities: int
    pvs_rooms: int


class FrameBuilder:
    """The state the frame rules keep across frames (the frame loop applies them)."""

    def __init__(
        self,
        scenario: Scenario,
        entities: int,
        per_client: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ) -> None:
        # Without network loss or socket drops no packet can go missing, so every packet
        # carries exactly one new command (as generated) and the commands need no counting.
        self.gapless = (
            scenario.clients.packet_loss == 0 and scenario.clients.socket_buffer_messages == 0
        )
        self.entities = entities
        """Entities world physics simulates (a cluster node sets its own before each frame)."""
        n = scenario.players.count
        if per_client is None:
            per_client = (
                np.full(n, -1, dtype=np.int64),
                np.zeros(n, dtype=np.int64),
                np.zeros(n, dtype=np.int64),
            )
        self.last_tick, self.seen, self.latest = per_client
        """Per client: the tick of its last processed packet (-1: none yet); and the scratch
        of :mod:`~simsrv.workload.frame_kernels` (duplicate senders): per client a stamp and
        the index of its newest packet.  ``per_client``: these three arrays, when builders
        share them (a cluster's nodes: :mod:`simsrv.pipeline.cluster.node`)."""
        self.bandwidth = (
            BandwidthControl(n, scenario.clients.rate_bytes_per_s)
            if scenario.clients.bandwidth_control
            else None
        )
