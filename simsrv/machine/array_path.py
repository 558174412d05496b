"""The machine's array path in one compiled call: execute a frame's
:class:`~simsrv.machine.plan_arrays.PlanArrays` with the compiled engine
(:func:`simsrv.machine.compiled_engine.execute_arrays`) and append what it recorded to the
machine's column stores (:mod:`simsrv.machine.trace`), names as the stores' codes.

No buffer is allocated per frame: the engine writes into the machine's scratch rows (grown
when a plan has more operations than ever before), the rows are then copied into the stores,
whose room the caller reserved.  Times are microseconds.
"""

from __future__ import annotations

from simsrv.compiled import compiled
from simsrv.machine.compiled_engine import REFUSED, execute_arrays


@compiled
def execute_and_record(
    thread, kind, cost, arg, activity, thread_cpu, barrier_parties, is_wait, n_locks,
    lock_wait, cpus, start_us, now_us, try_phased, scratch_ints, scratch_times, frame,
    thread_codes, activity_codes, lock_codes, trace_ints, trace_times, trace_size, holds_ints,
    holds_times, holds_size, out,
):  # fmt: skip
    """Execute the plan (arguments as :func:`execute_arrays`) as frame ``frame``; on success
    write its trace rows at ``trace_size`` of ``trace_ints`` (frame, cpu, thread code,
    activity code) and ``trace_times`` (start, end), and its critical sections at
    ``holds_size`` of ``holds_ints`` (lock code, frame, thread code) and ``holds_times``.
    ``thread_codes``, ``activity_codes`` (one more: lock waits) and ``lock_codes`` map the
    plan's numbering to the stores'.  ``scratch_ints`` and ``scratch_times`` are (4, >= ops)
    rows for the engine.  Returns the engine's status; ``out`` as the engine's."""
    status = execute_arrays(
        thread, kind, cost, arg, activity, thread_cpu, barrier_parties, is_wait, n_locks,
        lock_wait, cpus, start_us, now_us, try_phased, scratch_ints[0], scratch_ints[1],
        scratch_times[0], scratch_times[1], scratch_ints[2], scratch_ints[3], scratch_times[2],
        scratch_times[3], out,
    )  # fmt: skip
    if status == REFUSED:
        return status
    rows, holds = int(out[2]), int(out[3])
    for i in range(rows):
        t = scratch_ints[0, i]
        row = trace_size + i
        trace_ints[row, 0] = frame
        trace_ints[row, 1] = thread_cpu[t]
        trace_ints[row, 2] = thread_codes[t]
        trace_ints[row, 3] = activity_codes[scratch_ints[1, i]]
        trace_times[row, 0] = scratch_times[0, i]
        trace_times[row, 1] = scratch_times[1, i]
    for i in range(holds):
        row = holds_size + i
        holds_ints[row, 0] = lock_codes[scratch_ints[2, i]]
        holds_ints[row, 1] = frame
        holds_ints[row, 2] = thread_codes[scratch_ints[3, i]]
        holds_times[row, 0] = scratch_times[2, i]
        holds_times[row, 1] = scratch_times[3, i]
    return status
