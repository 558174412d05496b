"""Client packet stream: open-loop senders, as QuakeWorld clients are.

Each client sends one move packet per client frame at ``rate_hz`` (31.25/s by default, the
QuakeWorld client's rate for ``rate`` 2500 [MODEL §8]), independently of the server's replies.
Client ``c`` sends the packet of tick ``k`` at ``k / rate_hz + phase_c + jitter``, with the phase
uniform in one period (or set by its client machine's schedule with ``clients.hosts``:
:mod:`simsrv.workload.hosts`) and the jitter uniform in ``[0, jitter_s)`` (both seeded), or
both replayed from a load generator's measured send times (``clients.send_times_file``:
:mod:`simsrv.workload.send_times`); it
arrives after ``latency_s``; it is lost with probability ``packet_loss``.  The packet carries
the world state of that tick (action-range and visible counts).

The stream is generated lazily in chunks of ticks, and released in arrival order.  A chunk's
packets are sorted among themselves and merged into the sorted backlog of packets not yet
released: a packet of tick ``k`` arrives in ``[k / rate_hz, (k + 2) / rate_hz)`` plus the
latency, so only the backlog's last couple of ticks can interleave with a new chunk; they are
merged with its first packets, the rest of the backlog is kept as is.  Both the sort (a bucket
sort) and the merge are compiled and O(n): :mod:`simsrv.workload.messages`.  Released packets
are counted (those arriving in the run's measured window), not remembered.

Once the server has stopped (:meth:`ClientStream.close`), packets are still drawn for the
end-of-run accounting (sent, lost, in flight, queued: the last frame can end seconds after the
run's end when a frame is long), with the same send times and losses, but the world is no longer
advanced: those packets are never processed, so they carry no world state (zero counts), and
:meth:`ClientStream.settle` only counts them, tick by tick, without storing them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np

from simsrv.scenario.schema import ClientsSection
from simsrv.workload.hosts import send_phases
from simsrv.workload.messages import EMPTY, MESSAGE_DTYPE, merge_by_arrival, sort_by_arrival
from simsrv.workload.send_times import load_send_times
from simsrv.world.world import TickState, World

CHUNK_TICKS = 32
"""Most client ticks generated at a time (about one simulated second at 31.25 Hz)."""
CHUNK_MESSAGES = 2**18
"""Packets generated at a time, at most (unless one tick has more): many clients get chunks of
fewer ticks, so a chunk's arrays (~46 bytes a packet while it is sorted) stay ~10 MB, small
enough for the allocator to reuse rather than map fresh pages for each chunk."""


class Settlement(NamedTuple):
    """The client side of the end-of-run accounting at a time ``t``: packets ``sent`` at or
    before ``t``, of which ``lost`` on the way, ``in_flight`` (arriving after ``t``) and
    ``arrived`` (at the socket by ``t``, not yet released); ``arrival_s``: the arrived packets'
    arrival times in arrival order (None unless asked for)."""

    sent: int
    lost: int
    in_flight: int
    arrived: int
    arrival_s: np.ndarray | None


class ClientStream:
    """Lazily generated, arrival-ordered stream of client packets.

    ``window`` ``[t0, t1)`` (s): released packets arriving in it are counted
    (:meth:`arrived_in_window`).
    """

    def __init__(
        self,
        clients: ClientsSection,
        world: World,
        rng: np.random.Generator,
        window: tuple[float, float] = (0.0, np.inf),
    ) -> None:
        self.window = window
        self._arrived_in_window = 0
        self.cfg = clients
        self.world = world
        self.rng = rng
        self.dt_s = 1.0 / clients.rate_hz
        self.send_times = (
            load_send_times(clients.send_times_file, world.players, clients.rate_hz)
            if clients.send_times_file
            else None
        )
        """The measured send times replayed (:mod:`simsrv.workload.send_times`), or None."""
        self.phase_s = (
            send_phases(world.players, self.dt_s, clients.hosts, clients.host_burst_s, rng)
            if self.send_times is None
            else self.send_times.phase_s
        )
        # the client tick at which the measured window starts: the replay's first tick
        self._window_tick = int(np.ceil(window[0] / self.dt_s)) if np.isfinite(window[0]) else 0
        # the backlog: blocks sorted by (arrival, client, tick), each arriving before the next;
        # the first one is ``_buffer`` (released up to ``_head``), the others ``_later``; each
        # block with its arrival times (a contiguous copy, for searchsorted)
        self._buffer = EMPTY
        self._arrivals = np.zeros(0)
        self._head = 0
        self._later: deque[tuple[np.ndarray, np.ndarray]] = deque()
        self.chunk_ticks = max(1, min(CHUNK_TICKS, CHUNK_MESSAGES // max(world.players, 1)))
        """Client ticks generated at a time (:data:`CHUNK_TICKS`, fewer for many clients)."""
        self.next_tick = 0
        self.sent = 0
        self.lost_sent_s: list[np.ndarray] = []
        self._closed = False
        self.kernel_dropped = 0
        """Packets the server's kernel dropped before its socket (:attr:`on_arrivals` gave them
        no readable time); ``kernel_dropped_in_window``: those arriving in ``window``."""
        self.kernel_dropped_in_window = 0
        self.on_arrivals: Callable[[np.ndarray, float], np.ndarray] | None = None
        """Called after each chunk with the arrival times at the network card (s, ascending)
        of the packets it made known, those arriving from the previous horizon to the new one,
        and the new :attr:`horizon_s`; returns when each packet is readable from the socket
        (the end of its softirq: :mod:`simsrv.platforms.network_path`; NaN: dropped by the
        kernel), which then releases it.  None: a packet is readable as it arrives."""

    horizon_s: float = 0.0
    """Every packet arriving before this time has been generated (updated per chunk)."""

    def release_until(self, t_s: float) -> np.ndarray:
        """Remove and return, in arrival order, every packet with ``arrival_s <= t_s``."""
        while self.horizon_s <= t_s:
            self._generate_chunk()
        return self._take(t_s)

    def release_in_pieces(self, t_s: float) -> Iterator[np.ndarray]:
        """What :meth:`release_until` releases, as the consecutive pieces whose
        concatenation it is: the packets arriving before the horizon, then the next chunk's
        (each piece at most about a chunk, not the whole release at once)."""
        while self.horizon_s <= t_s:
            piece = self._take(float(np.nextafter(self.horizon_s, -np.inf)))
            if len(piece):
                yield piece
            self._generate_chunk()
        piece = self._take(t_s)
        if len(piece):
            yield piece

    def release_unordered(self, t_s: float) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """What :meth:`release_until` releases, as columns ``(client, tick, arrival_s)`` in no
        particular order, for a closed stream without a card (a packet is readable at its
        arrival): the ticks generated on the way are drawn as :meth:`release_until` draws
        them, but only their packets arriving after ``t_s`` are made into records (and join
        the backlog as it would leave them); the others are never sorted or stored.  For
        counting, where the order does not matter."""
        assert self._closed and self.on_arrivals is None, "an open stream, or one with a card"
        released = self._take(t_s)  # every packet generated so far arriving by ``t_s``
        if len(released):
            yield released["client"], released["tick"], released["arrival_s"]
        t0, t1 = self.window
        late = []
        while self.horizon_s <= t_s:
            for _ in range(self.chunk_ticks):
                tick = self.next_tick
                sent, kept = self._tick_sends(tick)
                clients = np.arange(self.world.players, dtype=MESSAGE_DTYPE["client"])
                if kept is not None:
                    sent, clients = sent[kept], clients[kept]
                arrival = sent + self.cfg.latency_s
                here = arrival <= t_s
                inside = here & (arrival >= t0) & (arrival < t1)
                self._arrived_in_window += int(np.count_nonzero(inside))
                ticks = np.full(int(np.count_nonzero(here)), tick, MESSAGE_DTYPE["tick"])
                yield clients[here], ticks, arrival[here]
                if not here.all():
                    late.append(self._records(tick, clients[~here], sent[~here]))
            self.horizon_s = self.next_tick * self.dt_s + self.cfg.latency_s
        if late:
            self._merge(sort_by_arrival(np.concatenate(late)))

    def pending_until(self, t_s: float) -> tuple[np.ndarray, np.ndarray]:
        """The packets not released yet whose readable time is at most ``t_s`` and before
        :attr:`horizon_s` (so final), in release order, with their readable times (s): what
        :meth:`release_until` releases up to such a time.  Nothing is released or generated."""
        t = min(t_s, float(np.nextafter(self.horizon_s, -np.inf)))
        blocks = [(self._buffer, self._arrivals, self._head)]
        blocks += [(block, arrivals, 0) for block, arrivals in self._later]
        packets, times = [], []
        for block, arrivals, head in blocks:
            cut = head + int(np.searchsorted(arrivals[head:], t, side="right"))
            packets.append(block[head:cut])
            times.append(arrivals[head:cut])
            if cut < len(arrivals):
                break
        if len(packets) == 1:
            return packets[0], times[0]
        return np.concatenate(packets), np.concatenate(times)

    def first_block(self) -> tuple[np.ndarray, np.ndarray, int, bool]:
        """The backlog's first block (packets in arrival order), their arrival times (s), the
        first one not released, and whether more blocks follow (for the compiled loop)."""
        return self._buffer, self._arrivals, self._head, bool(self._later)

    def release_to(self, head: int) -> None:
        """Mark the first block's packets before ``head`` released (by the frame loop)."""
        self._head = head

    def generate_until(self, t_s: float) -> None:
        """Generate the chunks of every packet arriving by ``t_s`` (as :meth:`release_until`
        does before it releases)."""
        while self.horizon_s <= t_s:
            self._generate_chunk()

    def join_next_block(self, start: int) -> None:
        """The first block is released up to its end while more follow: its packets before
        ``start`` are done (counted), the ones from ``start`` on (released, not read yet) and
        the next block become the first block, released up to the joint (for the frame loop,
        whose socket is a range of the first block)."""
        self._arrived_in_window += self._count_in_window(self._buffer[:start])
        block, arrivals = self._later.popleft()
        kept = self._buffer[start:]
        self._head -= start
        if len(kept):
            block = np.concatenate([kept, block])
            arrivals = np.concatenate([self._arrivals[start:], arrivals])
        self._buffer, self._arrivals = block, arrivals

    def _take(self, t_s: float, card: bool = False) -> np.ndarray:
        """Release the packets readable by ``t_s`` (``t_s`` before the horizon), or with
        ``card`` those arrived at the card by then (any ``t_s``)."""
        head = self._head
        times = self._buffer["arrival_s"] if card else self._arrivals
        cut = head + int(np.searchsorted(times[head:], t_s, side="right"))
        if cut < len(self._arrivals) or not self._later:  # within the first block
            if cut == head:
                return EMPTY
            self._head = cut
            return self._buffer[head:cut]
        taken = [self._buffer[head:cut]]
        while cut == len(self._arrivals) and self._later:
            self._next_block()
            times = self._buffer["arrival_s"] if card else self._arrivals
            cut = int(np.searchsorted(times, t_s, side="right"))
            taken.append(self._buffer[:cut])
        self._head = cut
        return np.concatenate(taken)

    def _next_block(self) -> None:
        """The first block is released entirely: count it and move to the next."""
        self._arrived_in_window += self._count_in_window(self._buffer)
        self._buffer, self._arrivals = self._later.popleft()
        self._head = 0

    def next_arrival_s(self) -> float:
        """Arrival time of the next packet not yet released."""
        while True:
            if self._head == len(self._arrivals) and self._later:
                self._next_block()
            elif self._head < len(self._arrivals) and self._arrivals[self._head] < self.horizon_s:
                return float(self._arrivals[self._head])
            else:
                self._generate_chunk()

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
        elif self._later:
            first = int(self._later[0][0]["tick"][0])
        else:
            first = self.next_tick
        return first - 2

    @property
    def pending(self) -> np.ndarray:
        """Generated packets not yet released, in arrival order."""
        blocks = [self._buffer[self._head :], *(block for block, _ in self._later)]
        return blocks[0] if len(blocks) == 1 else np.concatenate(blocks)

    def arrived_in_window(self) -> int:
        """Packets released so far whose arrival is in ``window``."""
        return self._arrived_in_window + self._count_in_window(self._buffer[: self._head])

    def _count_in_window(self, released: np.ndarray) -> int:
        t0, t1 = self.window
        arrival = released["arrival_s"]
        return int(np.count_nonzero((arrival >= t0) & (arrival < t1)))

    def settle(self, t_s: float, arrival_times: bool = False) -> Settlement:
        """The end-of-run accounting at ``t_s`` (after :meth:`close`, at or after the last
        release); the packets arrived by ``t_s`` count as released.

        The ticks not generated yet (their send times and losses drawn as :meth:`release_until`
        would draw them) are counted one by one and not stored, so the accounting costs one
        tick of packets however far ``t_s`` is.  ``arrival_times``: also return the arrival
        times of the packets arrived by ``t_s`` (for a bounded socket).
        """
        pending = self.pending
        lost = np.concatenate(self.lost_sent_s) if self.lost_sent_s else np.zeros(0)
        released = self.sent - len(pending) - lost.size  # every one sent before ``t_s``
        cut = int(np.searchsorted(pending["arrival_s"], t_s, side="right"))
        lost_n = int(np.count_nonzero(lost <= t_s))
        flying = int(np.count_nonzero(pending["sent_s"] <= t_s)) - cut
        sent = released + lost_n + cut + flying
        arrived = cut
        times = [pending["arrival_s"][:cut]]
        t0, t1 = self.window
        tick = self.next_tick
        while tick * self.dt_s <= t_s:
            sent_s, kept = self._draw(tick)
            sent += int(np.count_nonzero(sent_s <= t_s))
            if kept is not None:
                lost_n += int(np.count_nonzero(sent_s[~kept] <= t_s))
                sent_s = sent_s[kept]
            arrival = sent_s + self.cfg.latency_s
            here = arrival <= t_s
            arrived += int(np.count_nonzero(here))
            flying += int(np.count_nonzero((sent_s <= t_s) & ~here))
            inside = here & (arrival >= t0) & (arrival < t1)
            self._arrived_in_window += int(np.count_nonzero(inside))
            if arrival_times:
                times.append(arrival[here])
            tick += 1
        self._take(t_s, card=True)  # the pending packets arrived by ``t_s`` are released
        arrival_s = np.sort(np.concatenate(times), kind="stable") if arrival_times else None
        return Settlement(sent, lost_n, flying, arrived, arrival_s)

    def close(self) -> None:
        """The server has stopped: later ticks are generated without advancing the world."""
        self._closed = True

    def _generate_chunk(self) -> None:
        if self._closed:
            parts = [self._tick_messages(self.next_tick, None) for _ in range(self.chunk_ticks)]
        else:
            parts = [
                self._tick_messages(state.tick, state)
                for state in (self.world.advance(self.dt_s) for _ in range(self.chunk_ticks))
            ]
        self._merge(sort_by_arrival(np.concatenate(parts)))
        before, self.horizon_s = self.horizon_s, self.next_tick * self.dt_s + self.cfg.latency_s
        if self.on_arrivals is not None:
            self._known(before, self.horizon_s)

    def generate_next(self) -> None:
        """Generate the next chunk of ticks (moves :attr:`horizon_s` on)."""
        self._generate_chunk()

    def _known(self, t0: float, t1: float) -> None:
        """The packets arriving at the card in ``[t0, t1)`` are known (none arrives there
        later): :attr:`on_arrivals` gets their arrival times, and their release times become
        its readable times.  (Packets arriving from ``t1`` on keep their arrival as release
        time until known: at least ``t1``, after any release before the horizon.)"""
        blocks = [(self._buffer, self._arrivals, self._head), *((*b, 0) for b in self._later)]
        slices = []
        for block, arrivals, head in blocks:
            card = block["arrival_s"]
            lo = head + int(np.searchsorted(card[head:], t0, side="left"))
            hi = head + int(np.searchsorted(card[head:], t1, side="left"))
            if hi > lo:
                slices.append((card, arrivals, lo, hi))
        parts = [card[lo:hi] for card, _, lo, hi in slices]
        readable = self.on_arrivals(np.concatenate(parts) if parts else np.zeros(0), t1)
        at = 0
        for _, arrivals, lo, hi in slices:
            arrivals[lo:hi] = readable[at : at + hi - lo]
            at += hi - lo
        if np.isnan(readable).any():  # the kernel dropped some (its receive backlog full)
            self._drop_unreadable()

    def _drop_unreadable(self) -> None:
        """Remove the packets not released whose readable time is NaN, counted as dropped
        by the server's kernel (:attr:`kernel_dropped`)."""
        t0, t1 = self.window
        blocks = [(self._buffer, self._arrivals), *self._later]
        kept = []
        for index, (block, arrivals) in enumerate(blocks):
            gone = np.isnan(arrivals)
            if gone.any():
                card = block["arrival_s"][gone]
                self.kernel_dropped += len(card)
                self.kernel_dropped_in_window += int(np.count_nonzero((card >= t0) & (card < t1)))
                block, arrivals = block[~gone], arrivals[~gone]
            if index:
                kept.append((block, arrivals))
            else:
                self._buffer, self._arrivals = block, arrivals
        self._later = deque(kept)

    def _merge(self, chunk: np.ndarray) -> None:
        """Merge ``chunk`` (sorted by arrival, client, tick) into the backlog (sorted the same
        way) as its last blocks: the backlog's packets arriving at or after the chunk's first
        (the end of its last block: the tails) are merged with the chunk's packets arriving
        no later than the tails' last into one block, the rest of the chunk is the last block;
        the rest of the backlog is untouched.  The order is the one sorting everything would
        give."""
        if len(chunk) == 0:
            return
        first = float(chunk["arrival_s"][0])
        tails = []
        while True:
            later = bool(self._later)
            block, arrivals = self._later[-1] if later else (self._buffer, self._arrivals)
            lo = 0 if later else self._head
            # (by the card's arrival: ``arrivals`` holds the readable times of packets known)
            split = lo + int(np.searchsorted(block["arrival_s"][lo:], first, side="left"))
            if split == len(arrivals):
                break
            tails.append(block[split:])
            if not later:
                self._buffer, self._arrivals = block[:split], arrivals[:split]
                break
            if split:
                self._later[-1] = (block[:split], arrivals[:split])
                break
            self._later.pop()
        if tails:
            tail = np.concatenate(tails[::-1])
            last = tail["arrival_s"][-1]
            cut = int(np.searchsorted(chunk["arrival_s"], last, side="right"))
            self._append(merge_by_arrival(tail, chunk[:cut]))
            chunk = chunk[cut:]
        self._append(chunk)

    def _append(self, block: np.ndarray) -> None:
        """Add ``block`` (arriving after the backlog) as the backlog's last block."""
        if len(block):
            self._later.append((block, np.ascontiguousarray(block["arrival_s"])))

    def _tick_messages(self, tick: int, state: TickState | None) -> np.ndarray:
        """The packets of client tick ``tick``; ``state`` None: no world state (closed)."""
        sent, kept = self._tick_sends(tick)
        msgs = self._records(tick, np.arange(self.world.players), sent)
        if state is not None:
            msgs["range_count"] = state.range_count
            msgs["visible_count"] = state.visible_count
            msgs["pvs_rooms"] = state.pvs_rooms
            msgs["shot"] = state.actions.shot
        return msgs if kept is None else msgs[kept]

    def _tick_sends(self, tick: int) -> tuple[np.ndarray, np.ndarray | None]:
        """Draw the sends of client tick ``tick`` (:meth:`_draw`) and account them: the next
        tick, the packets sent, the send times of those lost.  Returns every client's send
        time (s) and which packets are not lost (None: none lost)."""
        self.next_tick = tick + 1
        sent, kept = self._draw(tick)
        self.sent += len(sent)
        if kept is not None:
            self.lost_sent_s.append(sent[~kept])
        return sent, kept

    def _records(self, tick: int, clients: np.ndarray, sent: np.ndarray) -> np.ndarray:
        """The packets ``clients`` sent at ``sent`` (s) for tick ``tick``, without world state
        (zero counts)."""
        msgs = np.zeros(len(clients), dtype=MESSAGE_DTYPE)
        msgs["sent_s"] = sent
        msgs["arrival_s"] = sent + self.cfg.latency_s
        msgs["client"] = clients
        msgs["tick"] = tick
        msgs["commands"] = 1
        return msgs

    def _draw(self, tick: int) -> tuple[np.ndarray, np.ndarray | None]:
        """Send times (s) of every client's packet of ``tick`` and which are not lost (None:
        no loss), from the stream's random draws (jitter, then losses)."""
        n = self.world.players
        if self.send_times is None:
            late = self.rng.uniform(0.0, self.cfg.jitter_s, n)
        else:
            late = self.send_times.lateness(tick, self._window_tick)
        sent = tick * self.dt_s + self.phase_s + late
        if self.cfg.packet_loss > 0:
            return sent, ~(self.rng.random(n) < self.cfg.packet_loss)
        return sent, None
