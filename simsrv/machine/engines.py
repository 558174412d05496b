"""The machine engines, by name (``machine.engine``): both execute the same plans and give the
same trace, bit for bit (``tests/test_engines.py``).

``fast`` (default)  :class:`simsrv.machine.executor.Machine`: the compiled engine
                    (:mod:`simsrv.machine.engine`) with exact shortcuts.
``simpy``           :class:`simsrv.machine.simpy_engine.SimpyMachine`: simpy processes,
                    resources and events, op by op, written for clarity: the reference and
                    the model's specification.

An engine is a class built as ``Engine(cpus, smt_per_core, smt_throughput, background=(),
signal_send_us=0.0, signal_wakeup_us=0.0, irq_cpu=None, softirq_us=0.0, max_backlog=300,
interrupt_source=None, quota=None, cold_start=None)`` (``background``: busy share of each CPU
taken by other programs; the signal costs: a thread library that wakes sleepers with signals;
the interrupt CPU: each packet given to ``add_interrupts(arrivals_us, horizon_us) ->
readable_us`` costs it a softirq, ``interrupt_source()`` adds the next packets; ``quota``: a
CPU quota, :mod:`simsrv.machine.quota`; ``cold_start``: the cold start of an idle CPU,
:mod:`simsrv.machine.cold_start`) with
``execute(plan, frame, start_s) -> end_s``, ``finish()``, ``trace``, ``charged_us``,
``lock_holds``, ``smt_per_core`` and ``settled_us(next_start_us)`` (how far its records are
complete, :class:`simsrv.machine.trace.Settled`: the run takes them out as it goes,
:mod:`simsrv.pipeline.trace_stream`).
"""

from __future__ import annotations

from simsrv.core.registry import Registry
from simsrv.machine.executor import Machine
from simsrv.machine.simpy_engine import SimpyMachine

ENGINES: Registry[type] = Registry("machine engine")
ENGINES.register("fast", Machine)
ENGINES.register("simpy", SimpyMachine)
