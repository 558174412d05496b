"""The frame loop's steps compiled: release and read packets, build the frame, execute and
record its plan.

A strategy's compiled loop (e.g. :func:`simsrv.strategies.abdelkhalek._frames`) is::

    machine = loop.machine
    while next_frame(loop):
        ... plan the frame from frame_messages(loop) and the reply arrays ...
        if not finish_frame(loop, machine, thread, kind, cost, arg, activity):
            break
        ... write the frame's strategy columns at row loop.ints[ROW] - 1 ...
    return loop.ints[REASON]

These steps are the only implementation of a frame: :func:`build` applies the frame rules,
:func:`finish_plan` executes the plan on the machine's compiled engine
(:func:`simsrv.machine.engine.execute`) and :func:`commit` records the frame, for every server
and cluster node (:mod:`simsrv.pipeline.frame_loop` drives them; a frame planned in Python
calls the ``*_compiled`` wrappers).  A frame is a transaction: :func:`next_frame` changes
nothing but the loop's clock when no packet is queued (and scratch arrays); :func:`finish_plan`
commits everything once the plan has run.  A step that cannot go on (the stream must generate
ticks or move to its next block, a store lacks room, a table is not loaded) returns False with
the reason in ``ints[REASON]`` *before* changing any state, and the caller acts and calls
again.  ``tests/test_compiled_loop.py`` checks that a strategy's compiled planner and its
Python plan give the same frames, bit for bit.
"""

from __future__ import annotations

from simsrv.core.compiled import compiled, inlined
from simsrv.frame_steps.state import (
    B_FROM,
    B_TO,
    BANDWIDTH,
    CHOKED,
    COLD_DECAY_US,
    COLD_REFILL_US,
    COLD_WAKE_US,
    COMMANDS,
    CPP,
    CUT,
    ENTITIES,
    ENTITY_BYTES,
    F_CHOKED,
    F_COMMANDS,
    F_MESSAGES,
    F_PHYSICS,
    F_QUEUED,
    F_REPLIES,
    FRAME,
    FRAME_PERIOD,
    GAPLESS,
    HEAD,
    HEADER_BYTES,
    HORIZON,
    INTERRUPTS,
    LAST_END,
    LAST_PHYSICS,
    LATER,
    LIMIT,
    MAX_BYTES,
    MAX_ENTITIES,
    MEASURE_FROM,
    MINTIC,
    NEED,
    NEW_CHUNK,
    NEXT_BLOCK,
    NEXT_START,
    NO_ARRIVAL,
    NOW,
    PHYSICS,
    PLAN_ERROR,
    PROCESSED,
    PVS,
    RANGE,
    RATE,
    READ,
    READ_ALL,
    READ_FIXED_US,
    READ_PACKET_US,
    READ_RANGE_US,
    READ_SPEED,
    READ_WORLD_US,
    REASON,
    REPLIES,
    RING,
    ROOM,
    ROW,
    STAMP,
    STOP,
    STOPPED,
    UNIQUE,
    VISIBLE,
)
from simsrv.frame_steps.wakeup import wakeup_s
from simsrv.machine import engine
from simsrv.machine.cold_start import cold_us
from simsrv.workload.bandwidth import MAX_BACKUP_BYTES
from simsrv.workload.frame import FrameWorkload
from simsrv.workload.frame_kernels import (
    commit_ticks,
    count_commands,
    distinct_senders,
    reply_targets,
)
from simsrv.workload.response_time import record_packets

US_PER_S = 1e6


@inlined
def stop(loop, reason):
    """Return False with ``reason`` (the call's result) in ``ints[REASON]``."""
    loop.ints[REASON] = reason
    return False


@compiled
def _released(arrivals, head, now):
    """The first index at or after ``head`` whose arrival is after ``now`` (``searchsorted``
    side right)."""
    lo, hi = head, len(arrivals)
    while lo < hi:
        mid = (lo + hi) >> 1
        if arrivals[mid] <= now:
            lo = mid + 1
        else:
            hi = mid
    return lo


@compiled
def next_frame(loop):
    """Release the packets arrived by the clock, read the frame's packets and build the frame
    (``CUT`` ... ``PVS``); True when a frame is ready.  With nothing queued the clock jumps to
    the next arrival plus the wake-up latency; with a fixed frame period (``FRAME_PERIOD``)
    the clock first waits for the period's next start, and a frame runs there with whatever
    is queued, nothing included."""
    ints, floats, arrivals = loop.ints, loop.floats, loop.arrivals
    n = len(arrivals)
    periodic = floats[FRAME_PERIOD] > 0.0
    while True:
        if periodic and floats[NOW] < floats[NEXT_START]:
            floats[NOW] = floats[NEXT_START]  # asleep until the period's next start
        now = floats[NOW]
        if now >= floats[STOP]:
            return stop(loop, STOPPED)
        if now >= floats[HORIZON]:
            floats[NEED] = now
            return stop(loop, NEW_CHUNK)
        head, read = ints[HEAD], ints[READ]
        cut = _released(arrivals, head, now)
        if cut == n and ints[LATER]:
            return stop(loop, NEXT_BLOCK)
        if cut == head and read == head and not periodic:  # nothing queued, nothing arrived
            if head < n and arrivals[head] < floats[HORIZON]:
                floats[NOW] = arrivals[head] + wakeup_s(ints, floats)  # asleep until woken
                continue
            return stop(loop, NO_ARRIVAL)
        break
    taken = min(ints[LIMIT], cut - read)
    if ints[READ_ALL] and taken < ints[LIMIT]:  # packets arriving while it reads join it
        packets = loop.buffer
        t = advance_read(floats, read_start(floats, now),
                         packets["range_count"][read : read + taken])  # fmt: skip
        j = cut
        while taken < ints[LIMIT] and j < n and arrivals[j] <= t:
            t = advance_read(floats, t, packets["range_count"][j : j + 1])
            taken += 1
            j += 1
        if taken < ints[LIMIT]:  # the socket was read empty at ``t``
            if j == n and ints[LATER]:
                return stop(loop, NEXT_BLOCK)
            if t >= floats[HORIZON]:  # packets arriving by ``t`` are not all generated yet
                floats[NEED] = t
                return stop(loop, NEW_CHUNK)
        cut = j
    ints[CUT], ints[B_FROM], ints[B_TO] = cut, read, read + taken
    build_frame(loop, now)
    return True


@inlined
def physics_due(floats, now):
    """Whether a frame starting at ``now`` (s) runs world physics (``sv_mintic`` has passed
    since it last ran)."""
    return now - floats[LAST_PHYSICS] >= floats[MINTIC]


@compiled
def read_start(floats, now):
    """When a frame starting at ``now`` (s) begins reading its packets, s: after the cold start
    of the CPU's idleness since the last frame ended, the fixed frame work and world physics
    when due (``SV_Frame`` runs them before ``SV_ReadPackets`` [MODEL §8]), at the reading
    CPU's speed."""
    work = cold_us(floats[COLD_WAKE_US], floats[COLD_REFILL_US], floats[COLD_DECAY_US],
                   (now - floats[LAST_END]) * US_PER_S)  # fmt: skip
    work += floats[READ_FIXED_US]
    if physics_due(floats, now):
        work += floats[READ_WORLD_US]
    return now + work / floats[READ_SPEED] / US_PER_S


@compiled
def advance_read(floats, t, range_counts):
    """The read clock ``t`` (s) after reading and executing packets with ``range_counts``
    entities in their action ranges, one after the other: each its receive call and its
    execution with one user command (``SV_ReadPackets`` executes a packet before it reads the
    next)."""
    for i in range(len(range_counts)):
        work = floats[READ_PACKET_US] + floats[READ_RANGE_US] * range_counts[i]
        t += work / floats[READ_SPEED] / US_PER_S
    return t


@compiled
def frame_messages(loop):
    """The packets of the frame being built (a view of ``buffer``)."""
    return loop.buffer[loop.ints[B_FROM] : loop.ints[B_TO]]


@compiled
def build(loop, now):
    """:func:`build_frame` (for Python callers: a socket's packets)."""
    build_frame(loop, now)


@inlined
def build_frame(loop, now):
    """The frame rules [MODEL §1, §8] on the packets ``buffer[B_FROM:B_TO]`` read at ``now``
    (s), without their commits (:func:`finish_plan` makes them, so a frame built again is the
    same): the commands each packet executes (1, or up to ``commands_per_packet`` after
    missing ticks), whether world physics runs (``sv_mintic`` passed), the clients replied to
    (each sender once, its newest packet's counts) and, with bandwidth control, which of them
    the rate limit chokes (QuakeWorld's ``Netchan_CanPacket``: the channel must be clear by
    ``now + MAX_BACKUP / rate``; sending ``b`` bytes moves ``cleartime`` to ``max(cleartime,
    now) + b / rate``)."""
    ints, floats = loop.ints, loop.floats
    first, end = ints[B_FROM], ints[B_TO]
    messages = loop.buffer[first:end]
    ints[STAMP] += 1
    unique = distinct_senders(messages, loop.seen, ints[STAMP])
    ints[UNIQUE] = unique
    if not ints[GAPLESS]:
        count_commands(messages, loop.last_tick, ints[CPP], unique)
    ints[PHYSICS] = physics_due(floats, now)
    counts, ranges = messages["commands"], messages["range_count"]
    commands = end - first if ints[GAPLESS] else 0
    ranged = 0
    for i in range(end - first):
        if not ints[GAPLESS]:
            commands += counts[i]
        ranged += ranges[i]
    ints[COMMANDS], ints[RANGE] = commands, ranged
    out_c, out_v, out_p = loop.reply_clients, loop.reply_visible, loop.reply_pvs
    if unique:  # every sender once: in read order
        replies = end - first
        clients, visible_counts = messages["client"], messages["visible_count"]
        pvs_rooms = messages["pvs_rooms"]
        for j in range(replies):
            out_c[j], out_v[j], out_p[j] = clients[j], visible_counts[j], pvs_rooms[j]
    else:
        ints[STAMP] += 1
        replies = reply_targets(messages, loop.seen, ints[STAMP], loop.latest, out_c, out_v, out_p)
    choked = 0
    if ints[BANDWIDTH]:
        rate = floats[RATE]
        clear_by = now + MAX_BACKUP_BYTES / rate
        kept = 0
        for j in range(replies):
            clear = loop.cleartime[out_c[j]]
            if clear < clear_by:
                entities = min(out_v[j] + 1, ints[MAX_ENTITIES])
                size = min(ints[HEADER_BYTES] + ints[ENTITY_BYTES] * entities, ints[MAX_BYTES])
                loop.reply_clear[kept] = max(clear, now) + float(size) / rate
                out_c[kept], out_v[kept], out_p[kept] = out_c[j], out_v[j], out_p[j]
                kept += 1
            else:
                choked += 1
                loop.held[out_c[j]] = ints[FRAME]
        replies = kept
    ints[CHOKED] = choked
    visible, pvs = 0, 0
    for j in range(replies):
        visible += out_v[j]
        pvs += out_p[j]
    ints[REPLIES], ints[VISIBLE], ints[PVS] = replies, visible, pvs


@inlined
def finish_plan(
    loop, machine, thread, kind, cost, arg, activity, thread_cpu, barrier_parties, spawned,
    is_wait, thread_codes, activity_codes, lock_codes,
):  # fmt: skip
    """Execute the frame's plan (its columns and the machine's tables of its names,
    :meth:`Machine.tables <simsrv.machine.executor.Machine.tables>`) on the machine (``machine``:
    ``loop.machine``, which a compiled loop takes out of the loop once, not once per frame: each
    taking counts the references of its ~20 arrays) and commit
    the frame: the packets' ticks, physics, the replies' channels, the stream and socket
    pointers, the frame's row.  False (nothing done) when a store lacks room (:data:`ROOM`),
    the machine's interrupt schedule is short (:data:`INTERRUPTS`) or the plan is
    inconsistent (:data:`PLAN_ERROR`, the machine's code in ``out[0]``)."""
    ints, floats = loop.ints, loop.floats
    row = ints[ROW]
    if row >= len(loop.charged_us) or row >= len(loop.frame_times):
        return stop(loop, ROOM)
    now, out = floats[NOW], loop.out
    status = engine.execute(
        machine, thread, kind, cost, arg, activity, thread_cpu, barrier_parties, spawned,
        is_wait, thread_codes, activity_codes, lock_codes, ints[FRAME], now * US_PER_S, out,
    )  # fmt: skip
    if status == engine.ROOM:
        return stop(loop, ROOM)
    if status == engine.IRQ_SHORT:
        return stop(loop, INTERRUPTS)
    if status < 0:
        out[0] = status
        return stop(loop, PLAN_ERROR)
    loop.charged_us[row] = out[1]
    commit(loop, out[0] / US_PER_S)
    return True


@compiled
def finish_plan_compiled(
    loop, thread, kind, cost, arg, activity, thread_cpu, barrier_parties, spawned, is_wait,
    thread_codes, activity_codes, lock_codes,
):  # fmt: skip
    """:func:`finish_plan` for Python callers (a plan built in Python)."""
    return finish_plan(
        loop, loop.machine, thread, kind, cost, arg, activity, thread_cpu, barrier_parties,
        spawned, is_wait, thread_codes, activity_codes, lock_codes,
    )  # fmt: skip


@compiled
def commit_frame(loop, end):
    """:func:`commit` for Python callers (a plan the simpy reference executed)."""
    commit(loop, end)


@inlined
def commit(loop, end):
    """Commit the frame built, executed until ``end`` (s): the packets' ticks, physics, the
    replies' channels, the stream and socket pointers, the frame's row (``ROW``)."""
    ints, floats = loop.ints, loop.floats
    row, now = ints[ROW], floats[NOW]
    first, last = ints[B_FROM], ints[B_TO]
    if not ints[GAPLESS]:
        commit_ticks(loop.buffer[first:last], loop.last_tick, ints[UNIQUE])
    if ints[PHYSICS]:
        floats[LAST_PHYSICS] = now
    if ints[BANDWIDTH]:
        for j in range(ints[REPLIES]):
            loop.cleartime[loop.reply_clients[j]] = loop.reply_clear[j]
    ints[HEAD], ints[READ] = ints[CUT], last
    if floats[MEASURE_FROM] <= now < floats[STOP]:
        packets = loop.buffer[first:last]
        record_packets(
            packets["arrival_s"], packets["client"], now, end, ints[FRAME], loop.held,
            loop.response_counts, loop.response_stats,
        )  # fmt: skip
    # the frame's row (row ``row`` of the frame columns: the call's frames after the stored)
    loop.frame_times[row, 0], loop.frame_times[row, 1] = now, end
    f = loop.frame_ints
    f[row, F_MESSAGES], f[row, F_COMMANDS] = last - first, ints[COMMANDS]
    f[row, F_REPLIES], f[row, F_CHOKED] = ints[REPLIES], ints[CHOKED]
    f[row, F_PHYSICS], f[row, F_QUEUED] = ints[PHYSICS], ints[CUT] - last
    ints[PROCESSED] += last - first
    ints[FRAME] += 1
    ints[ROW] += 1
    floats[NOW] = floats[LAST_END] = end
    if floats[FRAME_PERIOD] > 0.0:  # the next start: a period on, or at once after an overrun
        floats[NEXT_START] = max(now + floats[FRAME_PERIOD], end)


@compiled
def frame_workload(loop):
    """The frame just built, as the strategies' :class:`~simsrv.workload.frame.FrameWorkload`
    (its reply arrays are views of the loop's, valid until the next frame)."""
    ints, replies = loop.ints, loop.ints[REPLIES]
    return FrameWorkload(
        ints[FRAME], loop.floats[NOW], frame_messages(loop), loop.reply_clients[:replies],
        loop.reply_visible[:replies], loop.reply_pvs[:replies], ints[CHOKED],
        ints[PHYSICS] != 0, ints[ENTITIES], ints[COMMANDS], ints[RANGE], ints[VISIBLE], ints[PVS],
    )  # fmt: skip


@compiled
def strategy_frames(loop, planner, args, records):
    """A strategy's compiled frame loop from its compiled planner
    (:class:`~simsrv.strategies.base.CompiledPlanner`): ``planner(frame, args)`` plans each
    frame (a :class:`~simsrv.workload.frame.FrameWorkload`) as ``(thread, kind, cost, arg,
    activity, record, complete)``: the plan's operation columns, the frame's values of the
    strategy's columns (written to ``records``) and False when it cannot plan the frame in
    compiled code (a table to load first: :data:`RING`).  Returns the reason it stopped."""
    ints, machine = loop.ints, loop.machine  # taken once (reference counts)
    while next_frame(loop):
        thread, kind, cost, arg, activity, record, complete = planner(frame_workload(loop), args)
        if not complete:
            return stop(loop, RING)
        if not finish_frame(loop, machine, thread, kind, cost, arg, activity):
            break
        row = ints[ROW] - 1  # the frame's row in the call's frame columns
        for j in range(len(record)):
            records[row, j] = record[j]
    return ints[REASON]


@inlined
def finish_frame(loop, machine, thread, kind, cost, arg, activity):
    """:func:`finish_plan` for a strategy's compiled loop (``machine``: ``loop.machine``, taken
    once before its frames): its plans carry the names of the loop's tables
    (``loop.thread_cpu`` ...)."""
    return finish_plan(
        loop, machine, thread, kind, cost, arg, activity, loop.thread_cpu, loop.barrier_parties,
        loop.spawned, loop.is_wait, loop.thread_codes, loop.activity_codes, loop.lock_codes,
    )  # fmt: skip
