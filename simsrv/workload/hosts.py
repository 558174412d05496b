"""Client send phases: independent per client, or correlated by the client machine (host).

The Cordeiro et al. experiments ran their 160 clients as processes on five machines
[P §5.1, T §4.1]: 32 processes per machine.  The area report measured that one client machine
sends at the client's 31.25 packets/s only up to about five clients, "satisfactory" up to ten,
"unacceptable" beyond [R §4.2, Fig. 6].  A host whose CPU cannot keep up runs its processes in
turn, so their packets leave one after another, in the order the CPU serves them, rather than
at independent times.  This module gives every client the phase (s, within one client period)
at which it sends its packet of each tick:

- ``hosts = 0`` (the default): an independent uniform phase per client (one draw of
  ``rng.uniform(0, period, players)``: the stream's historical draw, bit-identical).
- ``hosts = H > 0``: clients ``0 .. N-1`` are split into ``H`` contiguous blocks as evenly as
  possible (host of client ``c`` = ``c * H // N``; the players' positions do not depend on their
  index).  Host ``h`` draws a phase ``phi_h`` uniform in one period and a serving order (a
  uniform permutation of its ``P_h`` processes); the process in slot ``j`` sends at
  ``(phi_h + j * host_burst_s / P_h) mod period``.  So a host's packets of one tick leave in a
  burst ``host_burst_s`` long (plus the send jitter); ``host_burst_s`` = one period is a round
  robin that spreads them evenly (a saturated CPU serving each process once per round).

Every client still sends exactly one packet per tick, so its long-run rate is ``rate_hz``
whatever the hosts; a phase stays in ``[0, period)``, so a packet of tick ``k`` still leaves in
``[k, k + 2)`` periods (the stream's ordering argument holds).  The papers give no burst width
for [P]'s hosts: docs/calibration-groups.md shows the sensitivity instead of a value.
"""

from __future__ import annotations

import numpy as np

from simsrv.core.uninitialised import empty


def host_of(players: int, hosts: int) -> np.ndarray:
    """(players,) host index of each client: ``c * hosts // players`` (contiguous blocks whose
    sizes differ by at most one)."""
    return (np.arange(players, dtype=np.int64) * hosts) // players


def send_phases(
    players: int, period_s: float, hosts: int, burst_s: float, rng: np.random.Generator
) -> np.ndarray:
    """(players,) send phase of each client, s, in ``[0, period_s)`` (see the module)."""
    if hosts == 0:
        return rng.uniform(0.0, period_s, players)
    host = host_of(players, hosts)
    host_phase = rng.uniform(0.0, period_s, hosts)
    slot = empty(players, dtype=np.int64)
    size = np.bincount(host, minlength=hosts)
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    for h in range(hosts):
        slot[start[h] : start[h] + size[h]] = rng.permutation(size[h])
    phase = host_phase[host] + slot * (burst_s / size[host])
    phase = np.mod(phase, period_s)
    # a float rounding may land exactly on the period: fold it back into [0, period)
    return np.where(phase >= period_s, 0.0, phase)
