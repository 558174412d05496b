"""Sums that can be continued block by block: compensated (Kahan) sums per group in row order,
and exact sums.

pandas sums a float column per group with Kahan's compensation, row by row
(``Series.groupby(...).sum()``); these kernels do the same arithmetic in the same order, so a
sum streamed over blocks of rows equals, to the bit, the pandas sum of all the rows at once
(``tests/test_trace_digest.py`` checks it).  For each row ``i`` in group ``g``::

    y = value[i] - comp[g];  t = sum[g] + y;  comp[g] = (t - sum[g]) - y;  sum[g] = t

Where no pandas sum is to be matched, :class:`ExactSum` keeps the exact sum, whose correctly
rounded value (``math.fsum`` of every value) does not depend on the order or the blocks.
"""

from __future__ import annotations

import math

import numpy as np

from simsrv.core.compiled import compiled


@compiled
def add_grouped(
    values: np.ndarray,
    groups: np.ndarray,
    sums: np.ndarray,
    comps: np.ndarray,
    counts: np.ndarray,
) -> None:
    """Add ``values[i]`` to group ``groups[i]`` (rows with a negative group are skipped);
    ``sums``, ``comps`` (compensations) and ``counts`` (rows added) are updated in place."""
    for i in range(len(values)):
        g = groups[i]
        if g < 0:
            continue
        y = values[i] - comps[g]
        t = sums[g] + y
        c = t - sums[g] - y
        comps[g] = 0.0 if c != c else c  # an infinite value makes it NaN; pandas resets it
        sums[g] = t
        counts[g] += 1


class GroupSums:
    """Kahan sums of a float per integer group (codes ``0..``), grown as codes appear."""

    __slots__ = ("comps", "counts", "sums")

    def __init__(self, groups: int = 0) -> None:
        self.sums = np.zeros(groups)
        self.comps = np.zeros(groups)
        self.counts = np.zeros(groups, np.int64)

    def add(self, values: np.ndarray, groups: np.ndarray) -> None:
        """Add ``values`` row by row to their ``groups`` (negative: skipped)."""
        if len(groups) == 0:
            return
        top = int(groups.max()) + 1
        if top > len(self.sums):
            grow = top - len(self.sums)
            self.sums = np.concatenate([self.sums, np.zeros(grow)])
            self.comps = np.concatenate([self.comps, np.zeros(grow)])
            self.counts = np.concatenate([self.counts, np.zeros(grow, np.int64)])
        add_grouped(values, groups, self.sums, self.comps, self.counts)

    def present(self) -> np.ndarray:
        """The groups with at least one row, ascending."""
        return np.flatnonzero(self.counts)

    def get(self, group: int, default: float = 0.0) -> float:
        """The sum of ``group``, or ``default`` when it has no rows."""
        if 0 <= group < len(self.counts) and self.counts[group]:
            return float(self.sums[group])
        return default


class ExactSum:
    """The exact sum of floats added in any order, kept as a few floats (their exact sum)."""

    __slots__ = ("partials",)

    def __init__(self) -> None:
        self.partials: list[float] = []

    def add(self, values: np.ndarray) -> None:
        """Add finite ``values``."""
        terms = self.partials + np.asarray(values, float).tolist()
        partials: list[float] = []
        while True:  # the rounded sum, then the rounded rest, until nothing is left
            rest = math.fsum(terms + [-p for p in partials])
            if rest == 0.0:
                break
            partials.append(rest)
        self.partials = partials

    def value(self) -> float:
        """The exact sum, correctly rounded."""
        return math.fsum(self.partials)
