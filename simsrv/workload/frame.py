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
        clients = messages["client"]
        unique = len(set(clients.tolist())) == len(clients)
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
            clients, visible, pvs = _reply_targets(messages)
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
        """Commands per packet: the ticks since the client's previously processed packet.

        ``unique``: every packet of the frame comes from a different client (the common case,
        handled without sorting).
        """
        if len(messages) == 0:
            return
        clients, ticks = messages["client"], messages["tick"]
        if unique:
            gap = ticks - self.last_tick[clients]
            self.last_tick[clients] = ticks
        else:
            order = np.lexsort((ticks, clients))
            c, k = clients[order], ticks[order]
            previous = self.last_tick[c]
            same = np.zeros(len(c), dtype=bool)
            same[1:] = c[1:] == c[:-1]
            previous[1:][same[1:]] = k[:-1][same[1:]]
            gap = np.empty_like(k)
            gap[order] = k - previous
            np.maximum.at(self.last_tick, c, k)
        # every client starts at tick 0 with last tick -1, so a first packet counts 1 command
        messages["commands"] = np.minimum(np.maximum(gap, 1), self.cpp)


def _total(values: np.ndarray) -> int:
    """Sum of a small integer array (a Python sum of the list: ~10x faster than numpy's reduce
    on the few packets of a frame)."""
    return sum(values.tolist())


def _reply_targets(messages: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unique clients of the frame and, for each, the visible count and PVS rooms of its newest
    packet."""
    if len(messages) == 0:
        empty = np.zeros(0, dtype=np.int32)
        return empty, empty, empty
    newest_first = messages[::-1]
    clients, first = np.unique(newest_first["client"], return_index=True)
    return clients, newest_first["visible_count"][first], newest_first["pvs_rooms"][first]
