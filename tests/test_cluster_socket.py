"""The cluster node's socket against its specification: a FIFO queue of chunks from which a
handoff removes one player's packets (the reference below), operation by operation."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.pipeline.cluster.socket import NodeSocket, QueuedPackets
from simsrv.workload.messages import EMPTY, MESSAGE_DTYPE
from simsrv.workload.socket import SocketQueue


class ChunkSocket(SocketQueue):
    """The reference: every chunk scanned for the player's packets."""

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


PLAYERS = 6
NODES = 3

operation = st.one_of(
    st.tuples(st.just("deliver"), st.lists(st.integers(0, PLAYERS - 1), max_size=40)),
    st.tuples(st.just("read"), st.integers(0, NODES - 1), st.integers(0, 50)),
    st.tuples(st.just("handoff"), st.integers(0, PLAYERS - 1), st.integers(0, NODES - 1)),
)


def packets(clients: list[int], serial: int) -> np.ndarray:
    out = np.zeros(len(clients), dtype=MESSAGE_DTYPE)
    out["client"] = clients
    out["tick"] = np.arange(serial, serial + len(clients))  # every packet distinct
    out["arrival_s"] = out["tick"] * 0.01
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.lists(operation, max_size=60),
    st.sampled_from([0, 5, 30]),
    st.lists(st.integers(0, NODES - 1), min_size=PLAYERS, max_size=PLAYERS),
)
def test_node_socket_is_the_chunk_queue(operations, capacity, homes):
    """Deliveries (each player's packets to the node that holds them), reads of any size and
    handoffs of any player give the same packets, lengths and drops as the reference."""
    lists = QueuedPackets(PLAYERS)
    window = (0.05, 0.3)
    sockets = [NodeSocket(lists, capacity, window) for _ in range(NODES)]
    reference = [ChunkSocket(capacity, window) for _ in range(NODES)]
    home = list(homes)
    serial = 0
    for op in operations:
        if op[0] == "deliver":
            batch = packets(op[1], serial)
            serial += len(batch)
            for node in range(NODES):
                mine = batch[
                    np.isin(batch["client"], [p for p in range(PLAYERS) if home[p] == node])
                ]
                sockets[node].deliver_new(mine)
                reference[node].deliver(mine)
        elif op[0] == "read":
            _, node, limit = op
            got, want = sockets[node].read(limit), reference[node].read(limit)
            assert got.tobytes() == want.tobytes()
        else:
            _, player, dst = op
            src = home[player]
            if src == dst:
                continue
            got, want = sockets[src].take_client(player), reference[src].take_client(player)
            assert got.tobytes() == want.tobytes()
            sockets[dst].deliver(got)
            reference[dst].deliver(want)
            home[player] = dst
        for mine, theirs in zip(sockets, reference, strict=True):
            assert len(mine) == len(theirs)
            assert (mine.dropped, mine.dropped_in_window) == (
                theirs.dropped,
                theirs.dropped_in_window,
            )
    for node in range(NODES):  # what is left comes out in the same order
        assert sockets[node].read(10**6).tobytes() == reference[node].read(10**6).tobytes()
    assert (lists.count == 0).all() and (lists.first == -1).all()


def test_the_buffer_is_compacted_and_grown_without_losing_an_order():
    """Thousands of packets through one small socket: reads, handoffs out and back, the
    buffer compacted and grown many times, every packet out once, in order."""
    lists = QueuedPackets(50)
    a, b = NodeSocket(lists), NodeSocket(lists)
    ref_a, ref_b = ChunkSocket(), ChunkSocket()
    rng = np.random.default_rng(5)
    for step in range(400):
        batch = packets(rng.integers(0, 50, 200).tolist(), step * 200)
        a.deliver_new(batch)
        ref_a.deliver(batch)
        limit = int(rng.integers(0, 400))
        assert a.read(limit).tobytes() == ref_a.read(limit).tobytes()
        player = int(rng.integers(0, 50))
        moved, ref_moved = a.take_client(player), ref_a.take_client(player)
        assert moved.tobytes() == ref_moved.tobytes()
        b.deliver(moved)
        ref_b.deliver(ref_moved)
        back, ref_back = b.take_client(player), ref_b.take_client(player)  # and back again
        assert back.tobytes() == ref_back.tobytes()
        a.deliver(back)
        ref_a.deliver(ref_back)
    assert a.read(10**7).tobytes() == ref_a.read(10**7).tobytes()
    assert len(a) == len(b) == 0
