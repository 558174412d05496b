"""simsrv: a discrete-event simulator of multiplayer game-server workloads on multiprocessors.

Data flow: scenario -> world -> workload -> strategy plan -> machine -> trace -> metrics.

>>> from simsrv import load_scenario, run
>>> result = run(load_scenario(overrides=["run.duration_s=0.5", "run.warmup_s=0.1"]))
>>> result.summary["frames_per_s"] > 0
True

A run keeps neither its frames nor its interval trace unless asked (``run(scenario,
keep_frames=KEEP_ALL, keep_trace=KEEP_ALL)``, or a ``KeepWindow``): its metrics are digested as
it goes, so its memory does not grow with its length.

``RunResult``, ``run``, ``Scenario``, ``load_scenario``, ``KEEP_ALL`` and ``KeepWindow`` are
imported on first use, so that
importing a ``simsrv`` module (e.g. the command line's parser) does not load numpy, pandas or
scipy before a simulation needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simsrv.core.lazy import lazy_exports
from simsrv.version import __version__

if TYPE_CHECKING:
    from simsrv.pipeline.keep_window import KEEP_ALL, KeepWindow
    from simsrv.pipeline.load import load_scenario
    from simsrv.pipeline.result import RunResult, run
    from simsrv.scenario import Scenario

__all__ = [
    "KEEP_ALL",
    "KeepWindow",
    "RunResult",
    "Scenario",
    "__version__",
    "load_scenario",
    "run",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "RunResult": "simsrv.pipeline.result",
        "run": "simsrv.pipeline.result",
        "Scenario": "simsrv.scenario",
        "load_scenario": "simsrv.pipeline.load",
        "KEEP_ALL": "simsrv.pipeline.keep_window",
        "KeepWindow": "simsrv.pipeline.keep_window",
    },
    globals(),
)
