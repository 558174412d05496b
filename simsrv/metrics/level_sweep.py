"""A step function of how many intervals are open, swept in time order while the intervals
arrive out of order, block by block.

It gives the same numbers as :func:`simsrv.metrics.timeline.interval_levels` and
:func:`~simsrv.metrics.timeline.cumulative_time` over all the intervals at once, to the bit:
the level after the endpoints at one instant is an exact integer sum, and the cumulative time
``F`` is the same running sum ``acc[k] = acc[k-1] + (t[k] - t[k-1]) * flag[k-1]`` in the same
order.  The caller promises a *horizon*: every interval added later starts at or after it;
the endpoints before it are swept, the others wait.  Memory: the endpoints not swept yet, and
the swept steps from the earliest time a query may still ask for (:meth:`forget_before`).
"""

from __future__ import annotations

import numpy as np


class LevelSweep:
    """``F(t)``: time up to ``t`` during which at least ``threshold`` intervals are open."""

    __slots__ = ("_deltas", "_times", "acc", "flag", "horizon", "level", "threshold", "times")

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold
        self._times: list[np.ndarray] = []  # endpoints not swept yet ...
        self._deltas: list[np.ndarray] = []  # ... +1 (a start) or -1 (an end)
        self.horizon = -np.inf
        self.level = 0.0  # intervals open after the last swept instant
        self.times = np.zeros(0)  # swept instants kept (ascending) ...
        self.acc = np.zeros(0)  # ... F at each ...
        self.flag = np.zeros(0, bool)  # ... and whether the level there is >= threshold

    def add(self, starts: np.ndarray, ends: np.ndarray) -> None:
        """Intervals ``[starts[i], ends[i])`` (no start before the horizon)."""
        if len(starts):
            if starts.min() < self.horizon:
                raise ValueError("an interval starts before the sweep's horizon")
            self._times.append(np.concatenate([starts, ends]))
            self._deltas.append(np.repeat([1.0, -1.0], len(starts)))

    def advance(self, horizon: float) -> None:
        """Sweep every endpoint before ``horizon`` (``inf``: all of them)."""
        self.horizon = max(self.horizon, horizon)
        if not self._times:
            return
        times, delta = np.concatenate(self._times), np.concatenate(self._deltas)
        ready = times < self.horizon
        self._times, self._deltas = [times[~ready]], [delta[~ready]]
        self._sweep(times[ready], delta[ready])

    def _sweep(self, times: np.ndarray, delta: np.ndarray) -> None:
        if len(times) == 0:
            return
        order = np.argsort(times, kind="stable")
        times, delta = times[order], delta[order]
        unique, index = np.unique(times, return_index=True)
        levels = self.level + np.cumsum(delta)
        last_of_group = np.append(index[1:], len(times)) - 1
        levels = levels[last_of_group]
        flag = levels >= self.threshold
        if len(self.times):
            steps = np.diff(np.concatenate([self.times[-1:], unique]))
            held = np.concatenate([self.flag[-1:], flag[:-1]])
            acc = np.cumsum(np.concatenate([self.acc[-1:], steps * held]))[1:]
        else:
            acc = np.concatenate([[0.0], np.cumsum(np.diff(unique) * flag[:-1])])
        self.times = np.concatenate([self.times, unique])
        self.acc = np.concatenate([self.acc, acc])
        self.flag = np.concatenate([self.flag, flag])
        self.level = float(levels[-1])

    def at(self, t: np.ndarray | float) -> np.ndarray:
        """``F(t)`` for times up to the horizon (and after what was forgotten): the steps
        that start at the horizon add nothing yet."""
        t = np.asarray(t, dtype=float)
        if np.any(t > self.horizon):
            raise ValueError("F is asked for at or after the sweep's horizon")
        step = np.searchsorted(self.times, t, side="right") - 1
        if len(self.times) == 0:
            return np.zeros_like(t)
        i = np.clip(step, 0, len(self.times) - 1)
        inside = np.where(step >= 0, self.flag[i], False)
        return self.acc[i] + inside * (t - self.times[i])

    def forget_before(self, t: float) -> None:
        """Drop the swept steps no query at or after ``t`` needs."""
        keep = max(int(np.searchsorted(self.times, t, side="right")) - 1, 0)
        if keep:
            self.times, self.acc, self.flag = self.times[keep:], self.acc[keep:], self.flag[keep:]
