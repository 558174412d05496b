"""simsrv: a discrete-event simulator of multiplayer game-server workloads on multiprocessors.

Data flow: scenario -> world -> workload -> strategy plan -> machine -> trace -> metrics.

>>> from simsrv import load_scenario, run
>>> result = run(load_scenario(overrides=["run.duration_s=0.5", "run.warmup_s=0.1"]))
>>> result.summary["frames_per_s"] > 0
True
"""

from simsrv.result import RunResult, run
from simsrv.scenario import Scenario, load_scenario
from simsrv.version import __version__

__all__ = ["RunResult", "Scenario", "__version__", "load_scenario", "run"]
