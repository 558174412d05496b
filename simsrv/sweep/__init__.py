"""Grids of runs: strategy comparisons (``simsrv compare``), run locally, kept as tidy tables.

Data flow: base scenario -> grid of validated scenarios (:mod:`.grid`) -> runs on a process
pool (:mod:`.local`) -> tidy rows per run (:mod:`.records`) -> tables saved as each run
finishes (:mod:`.results`) -> mean and 95 % CI per point (:mod:`.statistics`).
"""

from simsrv.sweep.compare import compare
from simsrv.sweep.grid import DEFAULT_STRATEGIES
from simsrv.sweep.results import CompareResults
from simsrv.sweep.statistics import format_table, mean_ci

__all__ = ["DEFAULT_STRATEGIES", "CompareResults", "compare", "format_table", "mean_ci"]
