"""simsrv: a discrete-event simulator of multiplayer game-server workloads on multiprocessors.

Data flow: scenario -> world -> workload -> strategy plan -> machine -> trace -> metrics.

>>> from simsrv import load_scenario, run
>>> result = run(load_scenario(overrides=["run.duration_s=0.5", "run.warmup_s=0.1"]))
>>> result.summary["frames_per_s"] > 0
True

A run keeps no interval trace unless asked (``run(scenario, keep_trace=KEEP_ALL)``, or a
``TraceWindow``): its metrics are digested as it goes, so its memory does not grow with its
length.

``RunResult``, ``run``, ``Scenario``, ``load_scenario``, ``KEEP_ALL`` and ``TraceWindow`` are
imported on first use, so that
importing a ``simsrv`` module (e.g. the command line's parser) does not load numpy, pandas or
scipy before a simulation needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simsrv.lazy import lazy_exports
from simsrv.version import __version__

if TYPE_CHECKING:
    from simsrv.result import RunResult, run
    from simsrv.scenario import Scenario, load_scenario
    from simsrv.trace_stream import KEEP_ALL, TraceWindow

__all__ = [
    "KEEP_ALL",
    "RunResult",
    "Scenario",
    "TraceWindow",
    "__version__",
    "load_scenario",
    "run",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "RunResult": "simsrv.result",
        "run": "simsrv.result",
        "Scenario": "simsrv.scenario",
        "load_scenario": "simsrv.scenario",
        "KEEP_ALL": "simsrv.trace_stream",
        "TraceWindow": "simsrv.trace_stream",
    },
    globals(),
)
