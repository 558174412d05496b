"""Client packet stream: open-loop senders, as QuakeWorld clients are.

Each client sends one move packet per client frame at ``rate_hz`` (31.25/s by default, the
QuakeWorld client's rate for ``rate`` 2500 [MODEL §8]), independently of the server's replies.
Client ``c`` sends the packet of tick ``k`` at ``k / rate_hz + phase_c + jitter``, with the phase
uniform in one period and the jitter uniform in ``[0, jitter_s)`` (both seeded); it arrives after
``latency_s``; it is lost with probability ``packet_loss``.  The packet carries the world state of
that tick (action-range and visible counts).

The stream is generated lazily in chunks of ticks, and released in arrival order.  A chunk's
packets are sorted among themselves and merged into the sorted backlog of packets not yet
released: a packet of tick ``k`` arrives in ``[k / rate_hz, (k + 2) / rate_hz)`` plus the
latency, so only the backlog's last couple of ticks can interleave with a new chunk; they are
sorted again with it, the rest of the backlog is kept as is.  Once the
server has stopped (:meth:`ClientStream.close`), packets are still generated for the end-of-run
accounting (sent, lost, in flight, queued: the last frame can end seconds after the run's end
when a frame is long), with the same send times and losses, but the world is no longer advanced:
those packets are never processed, so they carry no world state (zero counts).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

import numpy as np

from simsrv.scenario.schema import ClientsSection
from simsrv.workload.messages import EMPTY, MESSAGE_DTYPE, sort_by_arrival
from simsrv.world.world import TickState, World

CHUNK_TICKS = 32
"""Client ticks generated at a time (about one simulated second at 31.25 Hz)."""


class ClientStream:
    """Lazily generated, arrival-ordered stream of client packets."""

    def __init__(self, clients: ClientsSection, world: World, rng: np.random.Generator) -> None:
        self.cfg = clients
        self.world = world
        self.rng = rng
        self.dt_s = 1.0 / clients.rate_hz
        self.phase_s = rng.uniform(0.0, self.dt_s, world.players)
        self._head = 0
        self._set_pending(EMPTY)
        self.next_tick = 0
        self.sent = 0
        self.lost_sent_s: list[np.ndarray] = []
        self._released_s: list[np.ndarray] = []
        self._closed = False

    horizon_s: float = 0.0
    """Every packet arriving before this time has been generated (updated per chunk)."""

    def release_until(self, t_s: float) -> np.ndarray:
        """Remove and return, in arrival order, every packet with ``arrival_s <= t_s``."""
        while self.horizon_s <= t_s:
            self._generate_chunk()
        head = self._head
        cut = bisect_right(self._arrivals, t_s, lo=head)
        if cut == head:
            return EMPTY
        self._head = cut
        return self._buffer[head:cut]

    def next_arrival_s(self) -> float:
        """Arrival time of the next packet not yet released."""
        while self._head == len(self._arrivals) or self._arrivals[self._head] >= self.horizon_s:
            self._generate_chunk()
        return self._arrivals[self._head]

    def oldest_unread_tick(self, socket_first_tick: int | None) -> int:
        """A lower bound on the client tick of every packet not yet read by the server, given
        the tick of the packet at the head of the socket (None: empty socket).

        Packets are read in arrival order, and a packet of tick ``k`` arrives in
        ``[k, k + 2)`` client periods (plus the latency): every packet arriving after one of
        tick ``k`` has a tick of at least ``k - 1`` (``k - 2`` returned: a tick of margin for
        rounding).
        """
        if socket_first_tick is not None:
            first = socket_first_tick
        elif self._head < len(self._arrivals):
            first = int(self._buffer["tick"][self._head])
        else:
            first = self.next_tick
        return first - 2

    @property
    def pending(self) -> np.ndarray:
        """Generated packets not yet released, in arrival order."""
        return self._buffer[self._head :]

    def released_arrival_s(self) -> np.ndarray:
        """Arrival times of every packet released so far, in release order, s."""
        return np.concatenate([*self._released_s, self._buffer["arrival_s"][: self._head]])

    def count_sent_before(self, t_s: float) -> dict[str, int]:
        """Packets sent at or before ``t_s``: total, lost on the way, and still in flight."""
        while self.next_tick * self.dt_s <= t_s:
            self._generate_chunk()
        lost = np.concatenate(self.lost_sent_s) if self.lost_sent_s else np.zeros(0)
        in_flight = int(np.count_nonzero(self.pending["sent_s"] <= t_s))
        unsent = int(np.count_nonzero(self.pending["sent_s"] > t_s))
        unsent_lost = int(np.count_nonzero(lost > t_s))
        return {
            "sent": self.sent - unsent - unsent_lost,
            "lost": int(lost.size) - unsent_lost,
            "in_flight": in_flight,
        }

    def close(self) -> None:
        """The server has stopped: later ticks are generated without advancing the world."""
        self._closed = True

    def _generate_chunk(self) -> None:
        if self._closed:
            parts = [self._tick_messages(self.next_tick, None) for _ in range(CHUNK_TICKS)]
        else:
            parts = [
                self._tick_messages(state.tick, state)
                for state in (self.world.advance(self.dt_s) for _ in range(CHUNK_TICKS))
            ]
        self._merge(sort_by_arrival(np.concatenate(parts)))
        self.horizon_s = self.next_tick * self.dt_s + self.cfg.latency_s

    def _merge(self, chunk: np.ndarray) -> None:
        """Merge ``chunk`` (sorted by arrival, client, tick) into the pending backlog (sorted
        the same way): the backlog's packets arriving before the chunk's first stay in front,
        the others are sorted with the chunk.  The order is the one sorting everything would
        give."""
        if len(chunk) == 0:
            return
        head = self._head
        split = bisect_left(self._arrivals, float(chunk["arrival_s"][0]), lo=head)
        if split < len(self._arrivals):
            chunk = sort_by_arrival(np.concatenate([self._buffer[split:], chunk]))
        kept = self._buffer[head:split]
        arrivals = self._arrivals[head:split]
        arrivals += chunk["arrival_s"].tolist()
        self._set_pending(np.concatenate([kept, chunk]) if len(kept) else chunk, arrivals)

    def _set_pending(self, pending: np.ndarray, arrivals: list[float] | None = None) -> None:
        # released packets are the prefix [:_head]; arrival times as a list for bisect
        if self._head:
            self._released_s.append(self._buffer["arrival_s"][: self._head].copy())
        self._buffer = pending
        self._head = 0
        self._arrivals: list[float] = (
            pending["arrival_s"].tolist() if arrivals is None else arrivals
        )

    def _tick_messages(self, tick: int, state: TickState | None) -> np.ndarray:
        """The packets of client tick ``tick``; ``state`` None: no world state (closed)."""
        cfg, n = self.cfg, self.world.players
        self.next_tick = tick + 1
        sent = tick * self.dt_s + self.phase_s + self.rng.uniform(0.0, cfg.jitter_s, n)
        msgs = np.zeros(n, dtype=MESSAGE_DTYPE)
        msgs["sent_s"] = sent
        msgs["arrival_s"] = sent + cfg.latency_s
        msgs["client"] = np.arange(n)
        msgs["tick"] = tick
        msgs["commands"] = 1
        if state is not None:
            msgs["range_count"] = state.range_count
            msgs["visible_count"] = state.visible_count
            msgs["pvs_rooms"] = state.pvs_rooms
            msgs["shot"] = state.actions.shot
        self.sent += n
        if cfg.packet_loss > 0:
            lost = self.rng.random(n) < cfg.packet_loss
            self.lost_sent_s.append(sent[lost])
            msgs = msgs[~lost]
        return msgs
