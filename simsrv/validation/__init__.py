"""The model against the papers: the reference table, its runs and the comparison.

Data flow: ``reference.toml`` (every published figure, :mod:`.reference`) -> the runs and
capacity searches of each row and seed (:mod:`.jobs`) -> the quantities of each run
(:mod:`.quantities`) -> per-row mean, 95 % CI, error and pass/fail (:mod:`.validate`) ->
text, JSON and Markdown (:mod:`.report`).
"""

from simsrv.validation.reference import Reference, ReferenceRow, load_reference
from simsrv.validation.validate import RowResult, calibration_failures, validate

__all__ = [
    "Reference",
    "ReferenceRow",
    "RowResult",
    "calibration_failures",
    "load_reference",
    "validate",
]
