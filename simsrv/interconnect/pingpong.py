"""The ping-pong benchmark of [V §4.1] run on the model.

Two nodes, a client (0) and a server (1); for each message size, ``iterations`` (100 in the
paper) round trips, and [V eq. 1-2]

    t_c = (t_f - t_i) / (2 p),        b = m / t_c

(the paper prints ``t_f + t_i``, a typo: the elapsed time is the difference).  ``t_c`` is
reported in us, ``b`` in MB/s with 1 MB = 10^6 bytes (the paper's sizes are decimal:
"10 a 100.000 Bytes").

The program follows the profile's semantics:

* ``sync`` [V Figure 3]: the client ``send()``s then ``recv()``s; the server ``recv()``s then
  ``send()``s the message back.  One iteration is two one-way trips, one after the other.
* ``async`` [V Figure 4]: each side posts its send and its receive, then waits for both.  The
  server posts its send before waiting for the client's message, so the two directions are
  in flight together and share the links ("as duas requisições ... podem ser efetuadas em
  paralelo").  A side starts its next iteration when both its send and its receive are
  complete.

With equal costs ``c = send + latency + receive`` and bandwidth ``B`` this gives
``t_c = c + m/B`` (sync) and ``t_c = c/2 + m/B`` (async): the overlap hides half of the
per-message cost, never the bytes (docs/interconnect.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from simsrv.interconnect.network import Network
from simsrv.interconnect.profile import InterconnectProfile

ITERATIONS = 100
"""Round trips per message size [V §4.1]."""

PAPER_SIZES = (
    10, 100, 400, 800, 1200, 1600, 2000, 2400, 2800, 3200, 4000, 5000, 6000, 8000,
    10000, 20000, 30000, 40000, 50000, 60000, 80000, 100000,
)  # fmt: skip
"""Message sizes, bytes.  [V §4.1] tests "10 a 100.000 Bytes" without listing the sizes; this
grid holds every size the text names (10, 2,400, 10,000, 20,000, 40,000 and 100,000 B) and
enough others to draw the curves."""

CLIENT, SERVER = 0, 1


@dataclass(frozen=True)
class PingpongPoint:
    """One size of the benchmark: the paper's ``t_c`` (us) and ``b`` (MB/s)."""

    profile: str
    message_bytes: int
    time_us: float
    bandwidth_MB_per_s: float  # noqa: N815 (the column name of the JSON rows)

    def row(self) -> dict:
        """The point as a row of ``simsrv pingpong --json``."""
        return {
            "profile": self.profile,
            "message_bytes": self.message_bytes,
            "time_us": self.time_us,
            "bandwidth_MB_per_s": self.bandwidth_MB_per_s,
        }


def elapsed_us(profile: InterconnectProfile, message_bytes: int, iterations: int) -> float:
    """``t_f - t_i``: the client's time for ``iterations`` round trips, us."""
    if iterations < 1:
        raise ValueError(f"iterations: must be >= 1, got {iterations}")
    network = Network(profile, 2)
    if profile.semantics == "sync":
        return _sync(network, message_bytes, iterations)
    return _async(network, message_bytes, iterations)


def _sync(network: Network, m: int, iterations: int) -> float:
    now = 0.0
    for _ in range(iterations):
        network.post(CLIENT, SERVER, m, now)  # client send(); then recv() blocks
        (ping,) = network.run()  # server recv() returns
        network.post(SERVER, CLIENT, m, ping.received_us)  # server send()
        (pong,) = network.run()  # client recv() returns
        now = pong.received_us
    return now


def _async(network: Network, m: int, iterations: int) -> float:
    # each side: PostSend, PostRecv (client) or PostRecv, PostSend (server), then both waits
    sends = {side: network.post(side, 1 - side, m, 0.0) for side in (CLIENT, SERVER)}
    round_of = {CLIENT: 1, SERVER: 1}
    received: dict[int, float] = {}
    end = 0.0
    while True:
        for delivery in network.advance(network.next_event_us()):
            side = delivery.dst
            received[side] = delivery.received_us
            done = max(delivery.received_us, network.sent_us(sends[side]))
            if side == CLIENT:
                end = done
            if round_of[side] < iterations:
                round_of[side] += 1
                sends[side] = network.post(side, 1 - side, m, done)
            elif side == CLIENT:
                return end


def run_size(profile: InterconnectProfile, message_bytes: int, iterations: int = ITERATIONS):
    """The benchmark at one size (a :class:`PingpongPoint`)."""
    time_us = elapsed_us(profile, message_bytes, iterations) / (2 * iterations)
    bandwidth = message_bytes / time_us if time_us > 0 else 0.0  # bytes/us = MB/s
    return PingpongPoint(profile.name, message_bytes, time_us, bandwidth)


def run_pingpong(
    profiles: Iterable[InterconnectProfile],
    sizes: Sequence[int] = PAPER_SIZES,
    iterations: int = ITERATIONS,
) -> list[PingpongPoint]:
    """Every profile at every size, profile by profile."""
    return [run_size(p, m, iterations) for p in profiles for m in sizes]
