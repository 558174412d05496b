"""The frame rules' per-packet work compiled (:mod:`simsrv.workload.frame`), on a frame's packets
(a structured array of :data:`~simsrv.workload.messages.MESSAGE_DTYPE`, in read order).

Used by :class:`~simsrv.workload.frame.FrameBuilder` and by the compiled frame loop
(:mod:`simsrv.frame_steps.kernels`), so both build a frame with the same code.  Duplicate
senders are found with *stamps*: ``seen[client] == stamp`` marks a client already met in the
pass that wrote ``stamp`` (each pass takes a new stamp, so ``seen`` is never cleared).
"""

from __future__ import annotations

import numpy as np

from simsrv.core.compiled import compiled
from simsrv.core.uninitialised import empty


@compiled
def distinct_senders(messages, seen, stamp):  # pragma: no cover - compiled
    """Whether every packet comes from a different client (stamps ``seen`` with ``stamp``)."""
    clients = messages["client"]
    for i in range(len(messages)):
        c = clients[i]
        if seen[c] == stamp:
            return False
        seen[c] = stamp
    return True


@compiled
def count_commands(messages, last_tick, cpp, unique):  # pragma: no cover - compiled
    """Write each packet's ``commands``: the ticks since its client's previously processed
    packet (``last_tick``, not changed here), at least 1 and at most ``cpp``.  ``unique``: the
    senders are all different; else a client's packets count from its earlier ones, in tick
    order."""
    clients, ticks, commands = messages["client"], messages["tick"], messages["commands"]
    m = len(messages)
    if unique:
        for i in range(m):
            commands[i] = min(max(ticks[i] - last_tick[clients[i]], 1), cpp)
        return
    key = empty(m, np.int64)  # (client, tick): unique, a client sends one packet a tick
    for i in range(m):
        key[i] = (np.int64(clients[i]) << 40) | ticks[i]
    order = np.argsort(key)
    for r in range(m):
        i = order[r]
        if r > 0 and clients[order[r - 1]] == clients[i]:
            previous = ticks[order[r - 1]]
        else:
            previous = last_tick[clients[i]]
        commands[i] = min(max(ticks[i] - previous, 1), cpp)


@compiled
def commit_ticks(messages, last_tick, unique):  # pragma: no cover - compiled
    """``last_tick`` after the packets are processed: each sender's tick when the senders are
    all different (``unique``), else the largest of a sender's ticks and its previous one."""
    clients, ticks = messages["client"], messages["tick"]
    if unique:
        for i in range(len(messages)):
            last_tick[clients[i]] = ticks[i]
        return
    for i in range(len(messages)):
        c = clients[i]
        if ticks[i] > last_tick[c]:
            last_tick[c] = ticks[i]


@compiled
def reply_targets(messages, seen, stamp, latest, clients, visible, pvs):  # pragma: no cover
    """The replied clients of packets whose senders repeat: each sender once, by client id,
    with its newest packet's visible entities and PVS rooms, written to ``clients``,
    ``visible`` and ``pvs``; returns how many.  Stamps ``seen`` with ``stamp`` (a new one);
    ``latest`` (per client) is scratch."""
    senders = messages["client"]
    count = 0
    for i in range(len(messages)):
        c = senders[i]
        if seen[c] != stamp:
            seen[c] = stamp
            clients[count] = c
            count += 1
        latest[c] = i
    clients[:count].sort()
    visible_counts, pvs_rooms = messages["visible_count"], messages["pvs_rooms"]
    for j in range(count):
        i = latest[clients[j]]
        visible[j] = visible_counts[i]
        pvs[j] = pvs_rooms[i]
    return count
