"""One server frame's workload, as the strategies see it, and the rules that build it.

QuakeWorld frame rules applied here, the same for every strategy [MODEL §1, §8]:

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
from simsrv.workload.frame_kernels import (
    commit_ticks,
    count_commands,
    distinct_senders,
    reply_targets,
)


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
    """Applies the frame rules; keeps the state they need across frames."""

    def __init__(self, scenario: Scenario, entities: int) -> None:
        self.server = scenario.server
        self.cpp = scenario.clients.commands_per_packet
        # Without network loss or socket drops no packet can go missing, so every packet
        # carries exactly one new command (as generated) and _fill_commands can be skipped.
        self.gapless = (
            scenario.clients.packet_loss == 0 and scenario.clients.socket_buffer_messages == 0
        )
        self.entities = entities
        n = scenario.players.count
        self.last_tick = np.full(n, -1, dtype=np.int64)
        """Per client: the tick of its last processed packet (-1: none yet)."""
        self.seen = np.zeros(n, dtype=np.int64)
        self.latest = np.zeros(n, dtype=np.int64)
        self.stamp = 0
        """Scratch of :mod:`~simsrv.workload.frame_kernels` (duplicate senders): per client a
        stamp and the index of its newest packet; the last stamp written."""
        self.last_physics_s = -np.inf
        self.bandwidth = (
            BandwidthControl(n, scenario.clients.rate_bytes_per_s)
            if scenario.clients.bandwidth_control
            else None
        )

    def build(self, index: int, start_s: float, messages: np.ndarray) -> FrameWorkload:
        """The workload of frame ``index`` starting at ``start_s`` with the packets read.

        The builder takes ownership of ``messages`` (it fills in ``commands`` in place).
        """
        self.stamp += 1
        unique = distinct_senders(messages, self.seen, self.stamp)
        if not self.gapless:
            self._fill_commands(messages, unique)
        physics = start_s - self.last_physics_s >= self.server.sv_mintic_s
        if physics:
            self.last_physics_s = start_s
        if unique:  # contiguous copies, not field views: compiled callees see one layout
            clients = np.ascontiguousarray(messages["client"])
            visible = np.ascontiguousarray(messages["visible_count"])
            pvs = np.ascontiguousarray(messages["pvs_rooms"])
        else:
            clients, visible, pvs = self._reply_targets(messages)
        choked = 0
        if self.bandwidth is not None and len(clients):
            ok = self.bandwidth.allow(clients, self.reply_bytes(visible), start_s)
            choked = int(len(clients) - ok.sum())
            clients, visible, pvs = clients[ok], visible[ok], pvs[ok]
        commands = len(messages) if self.gapless else _total(messages["commands"])
        return FrameWorkload(
            index,
            start_s,
            messages,
            clients,
            visible,
            pvs,
            choked,
            physics,
            self.entities,
            commands,
            _total(messages["range_count"]),
            _total(visible),
            _total(pvs),
        )

    def reply_bytes(self, visible: np.ndarray) -> np.ndarray:
        """Size of a reply that describes ``visible`` entities plus the player itself, bytes."""
        s = self.server
        entities = np.minimum(visible + 1, s.reply_max_entities)
        return np.minimum(
            s.reply_header_bytes + s.reply_bytes_per_entity * entities, s.reply_max_bytes
        ).astype(float)

    def _fill_commands(self, messages: np.ndarray, unique: bool) -> None:
        """Commands per packet: the ticks since the client's previously processed packet
        (:func:`~simsrv.workload.frame_kernels.count_commands`), then the clients' last
        ticks.  ``unique``: every packet of the frame comes from a different client."""
        if len(messages) == 0:
            return
        count_commands(messages, self.last_tick, self.cpp, unique)
        commit_ticks(messages, self.last_tick, unique)

    def _reply_targets(self, messages: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Unique clients of the frame and, for each, the visible count and PVS rooms of its
        newest packet (:func:`~simsrv.workload.frame_kernels.reply_targets`)."""
        m = len(messages)
        clients, visible, pvs = (np.empty(m, np.int32) for _ in range(3))
        self.stamp += 1
        count = reply_targets(messages, self.seen, self.stamp, self.latest, clients, visible, pvs)
        return clients[:count], visible[:count], pvs[:count]


def _total(values: np.ndarray) -> int:
    """Sum of a small integer array (a Python sum of the list: ~10x faster than numpy's reduce
    on the few packets of a frame)."""
    return sum(values.tolist())
