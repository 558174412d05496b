"""The router and the nodes' socket bank against their specification: the straightforward
router over FIFO queues of chunks (below), operation by operation, on random owners, packets,
reads and bounded sockets."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.pipeline.cluster.router import FORWARDED_PACKET_BYTES, Router
from simsrv.pipeline.cluster.socket import SocketBank
from simsrv.workload.messages import EMPTY, MESSAGE_DTYPE
from simsrv.workload.socket import SocketQueue

WINDOW = (0.05, 0.5)


class ChunkSocket(SocketQueue):
    """A node's socket as a FIFO of chunks; a handoff scans every chunk for the player."""

    def __init__(self, capacity: int, window: tuple[float, float]) -> None:
        super().__init__(capacity, window)
        self.arrived_in_window = 0

    def deliver_new(self, messages: np.ndarray) -> None:
        arrival = messages["arrival_s"]
        t0, t1 = self.window
        self.arrived_in_window += int(np.count_nonzero((arrival >= t0) & (arrival < t1)))
        self.deliver(messages)

    def take_client(self, client: int) -> np.ndarray:
        taken, kept = [], []
        for chunk in self._chunks:
            mine = chunk["client"] == client
            taken.append(chunk[mine])
            if not mine.all():
                kept.append(chunk[~mine])
        self._chunks.clear()
        self._chunks.extend(kept)
        out = np.concatenate(taken) if taken else EMPTY
        self._length -= len(out)
        return out


class ReferenceRouter:
    """The routing rule packet by packet (:mod:`simsrv.pipeline.cluster.router`'s docstring):
    each run of packets between two handoffs delivered, then the handoff."""

    def __init__(self, zoned, sockets, builders, exchange, handoff_bytes) -> None:
        self.zoned, self.sockets, self.builders = zoned, sockets, builders
        self.exchange, self.handoff_bytes = exchange, handoff_bytes
        self.serving = np.full(zoned.players, -1, dtype=np.int64)
        self.served = np.zeros(len(sockets), dtype=np.int64)
        self.handoffs: list[tuple] = []
        self.touched: set[int] = set()

    def route(self, arrived: np.ndarray, t_s: float) -> None:
        if len(arrived) == 0:
            return
        owner = self.serving[arrived["client"]].copy()
        for row, packet in enumerate(arrived):
            at = self.zoned.owner_at(int(packet["tick"]))
            if at is not None:
                owner[row] = at[packet["client"]]
            elif owner[row] < 0:
                owner[row] = self.zoned.owner_at(self.zoned.last_tick)[packet["client"]]
        previous = {}
        start = 0
        for i, packet in enumerate(arrived):
            c, o = int(packet["client"]), int(owner[i])
            before = previous.get(c, int(self.serving[c]))
            previous[c] = o
            if before < 0:
                self.serving[c] = o
                self.served[o] += 1
            elif before != o:
                self._deliver(arrived[start:i], owner[start:i])
                start = i
                self._hand_over(c, o, t_s)
        self._deliver(arrived[start:], owner[start:])

    def _deliver(self, messages, owner) -> None:
        for node in np.unique(owner).tolist():
            self.sockets[node].deliver_new(messages[owner == node])
            self.touched.add(node)

    def _hand_over(self, client: int, dst: int, t_s: float) -> None:
        src = int(self.serving[client])
        forwarded = self.sockets[src].take_client(client)
        size = self.handoff_bytes + FORWARDED_PACKET_BYTES * len(forwarded)
        self.exchange.post("handoff", src, dst, size, t_s, len(forwarded))
        self.sockets[dst].deliver(forwarded)
        if len(forwarded):
            self.touched.add(dst)
        self.builders[dst].last_tick[client] = self.builders[src].last_tick[client]
        self.serving[client] = dst
        self.served[src] -= 1
        self.served[dst] += 1
        self.handoffs.append((t_s, client, src, dst, len(forwarded)))


class Zoned:
    """The owners of the last ``keep`` ticks, as the zoned world keeps them."""

    def __init__(self, players: int, keep: int) -> None:
        self.players = players
        self.owner_ring = np.full((keep, players), -1, dtype=np.int32)
        self.first_tick, self.last_tick = 0, -1

    def advance(self, owners: list[int]) -> None:
        self.last_tick += 1
        self.owner_ring[self.last_tick % len(self.owner_ring)] = owners
        self.first_tick = max(self.first_tick, self.last_tick - len(self.owner_ring) + 1)

    def owner_at(self, tick: int):
        if not self.first_tick <= tick <= self.last_tick:
            return None
        return self.owner_ring[tick % len(self.owner_ring)]


class Posts:
    """An exchange that records the messages posted."""

    keep = True

    def __init__(self) -> None:
        self.posted: list[tuple] = []
        self.digest = SimpleNamespace(inside=lambda t: WINDOW[0] <= t < WINDOW[1])

    def post(self, *message) -> None:
        self.posted.append(message)


@st.composite
def runs(draw):
    players = draw(st.integers(1, 8))
    nodes = draw(st.integers(2, 4))
    owners = st.lists(st.integers(0, nodes - 1), min_size=players, max_size=players)
    operation = st.one_of(
        st.tuples(st.just("tick"), owners),
        st.tuples(
            st.just("route"),
            st.lists(st.tuples(st.integers(0, players - 1), st.integers(-4, 1)), max_size=30),
        ),
        st.tuples(st.just("read"), st.integers(0, nodes - 1), st.integers(0, 40)),
    )
    first = draw(owners)
    steps = draw(st.lists(operation, max_size=40))
    return players, nodes, first, steps, draw(st.sampled_from([0, 3, 12])), draw(st.integers(2, 5))


@settings(max_examples=300, deadline=None)
@given(runs())
def test_the_router_and_the_bank_are_the_reference_rule(run):
    """Same packets read in the same order, same lengths, drops and counts per node, same
    handoffs, messages, served players and command accounting, same nodes touched."""
    players, nodes, first, steps, capacity, keep = run
    zoned = Zoned(players, keep)
    zoned.advance(first)
    bank = SocketBank(nodes, players, capacity, WINDOW)
    new = Router(zoned, bank, _builders(nodes, players), Posts(), 8192)
    reference_sockets = [ChunkSocket(capacity, WINDOW) for _ in range(nodes)]
    old = ReferenceRouter(zoned, reference_sockets, _builders(nodes, players), Posts(), 8192)
    serial = 0
    t_s = 0.0
    for step in steps:
        if step[0] == "tick":
            zoned.advance(step[1])
        elif step[0] == "route":
            t_s += 0.01
            batch = np.zeros(len(step[1]), dtype=MESSAGE_DTYPE)
            batch["client"] = [c for c, _ in step[1]]
            batch["tick"] = [zoned.last_tick + offset for _, offset in step[1]]
            batch["commands"] = np.arange(serial, serial + len(batch))  # each packet distinct
            batch["arrival_s"] = t_s
            serial += len(batch)
            new.touched.clear()
            old.touched.clear()
            new.route(batch, t_s)
            old.route(batch, t_s)
            assert new.touched == old.touched
        else:
            _, node, limit = step
            got = bank.socket(node).read(limit)
            assert got.tobytes() == reference_sockets[node].read(limit).tobytes()
        _same(new, old, bank, reference_sockets)
    for node in range(nodes):  # what is left comes out in the same order
        assert bank.read(node, 10**6).tobytes() == reference_sockets[node].read(10**6).tobytes()
    assert (bank.count == 0).all() and (bank.length == 0).all()


def _builders(nodes: int, players: int) -> list:
    return [SimpleNamespace(last_tick=np.arange(players) + 100 * n) for n in range(nodes)]


def _same(new: Router, old: ReferenceRouter, bank: SocketBank, sockets: list) -> None:
    assert new.serving.tolist() == old.serving.tolist()
    assert new.served.tolist() == old.served.tolist()
    assert [tuple(h.__dict__.values()) for h in new.handoffs] == old.handoffs
    assert new.exchange.posted == old.exchange.posted
    for mine, theirs in zip(new.builders, old.builders, strict=True):
        assert mine.last_tick.tolist() == theirs.last_tick.tolist()
    for node, socket in enumerate(sockets):
        view = bank.socket(node)
        assert len(view) == len(socket)
        assert (view.dropped, view.dropped_in_window) == (socket.dropped, socket.dropped_in_window)
        assert view.arrived_in_window == socket.arrived_in_window


@pytest.mark.parametrize("reserve", [0, 100_000])
def test_the_buffer_drops_its_dead_slots_and_grows_keeping_every_order(reserve, monkeypatch):
    """Hundreds of thousands of packets through a small bank: reads, handoffs back and forth,
    the buffer compacted and grown many times (into new arrays, or, past 8,192 slots, within
    its reserved ones); every packet comes out once, in order."""
    from simsrv.pipeline.cluster import socket

    monkeypatch.setattr(socket, "RESERVE_FROM_SLOTS", 8192)
    players, nodes = 50, 3
    zoned = Zoned(players, 4)
    rng = np.random.default_rng(5)
    zoned.advance(rng.integers(0, nodes, players).tolist())
    bank = SocketBank(nodes, players, 0, WINDOW, reserve)
    moves = []  # the buffer's arrays, each time they change
    make_room = bank._make_room

    def watched(extra):
        make_room(extra)
        if not moves or moves[-1] is not bank.buffer:
            moves.append(bank.buffer)

    bank._make_room = watched
    new = Router(zoned, bank, _builders(nodes, players), Posts(), 8192)
    sockets = [ChunkSocket(0, WINDOW) for _ in range(nodes)]
    old = ReferenceRouter(zoned, sockets, _builders(nodes, players), Posts(), 8192)
    for step in range(300):
        zoned.advance(rng.integers(0, nodes, players).tolist())
        batch = np.zeros(600, dtype=MESSAGE_DTYPE)
        batch["client"] = rng.integers(0, players, len(batch))
        batch["tick"] = zoned.last_tick - rng.integers(0, 2, len(batch))
        batch["commands"] = np.arange(step * 600, (step + 1) * 600)
        batch["arrival_s"] = step * 0.01
        new.route(batch, step * 0.01)
        old.route(batch, step * 0.01)
        for node in range(nodes):
            limit = int(rng.integers(0, 400))
            assert bank.read(node, limit).tobytes() == sockets[node].read(limit).tobytes()
    _same(new, old, bank, sockets)
    assert bank.size < 64 * 1024  # the dead slots were dropped, not kept
    assert max(len(m) for m in moves) == max(reserve, bank.size)
    if reserve:  # moved once into the reserved arrays, then grown in place
        assert len(moves[-1]) == reserve and [len(m) for m in moves].count(reserve) == 1
    for node in range(nodes):
        assert bank.read(node, 10**7).tobytes() == sockets[node].read(10**7).tobytes()


def test_the_reserve_is_bounded_by_the_machine_memory(monkeypatch):
    """Address space for at most a quarter of the memory (a larger mapping may be refused)."""
    from simsrv.pipeline.cluster import socket

    pages = {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": 64 * 1024}  # 256 MiB
    monkeypatch.setattr(socket.os, "sysconf", lambda name: pages[name])
    assert socket.most_reserved_slots() == 2**26 // socket.SLOT_BYTES
    bank = SocketBank(2, 3, 0, WINDOW, reserve=10**9)
    assert bank.reserve == 2**26 // socket.SLOT_BYTES
    assert bank.size == len(bank.buffer) == socket.INITIAL_SLOTS  # reserved only when large
