"""The modelled machine: executes frame plans on N simulated CPUs and records a trace.

Strategies describe *what* runs where
(:mod:`simsrv.machine.plan`); the machine decides *when*, charging the costs on simulated CPUs,
serialising threads that share a CPU, and making threads wait at barriers, locks and joins.
"""

from simsrv.machine.executor import Machine
from simsrv.machine.plan import (
    SPAWNER_CPU,
    Acquire,
    BarrierWait,
    Compute,
    FramePlan,
    Join,
    Release,
    RunFirst,
    Spawn,
    SpinSection,
    Thread,
)
from simsrv.machine.trace import WAIT_ACTIVITIES, Trace, is_wait

__all__ = [
    "Acquire",
    "BarrierWait",
    "Compute",
    "FramePlan",
    "Join",
    "Machine",
    "Release",
    "SPAWNER_CPU",
    "RunFirst",
    "Spawn",
    "SpinSection",
    "Thread",
    "Trace",
    "WAIT_ACTIVITIES",
    "is_wait",
]
