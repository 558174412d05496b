"""Time-weighted statistics over the interval trace.

"Number of busy CPUs" is a level that changes at interval starts and ends; the parallel-time
fraction is the share of wall time during which that level equals the number of CPUs
[P §5.2: "we utilize all available processors' processing power during 55.65% of the time"].
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd


def clip_intervals(trace: pd.DataFrame, t0_s: float, t1_s: float) -> pd.DataFrame:
    """Intervals of ``trace`` cut to the window ``[t0_s, t1_s]`` (empty ones removed)."""
    start = trace["start_s"].clip(lower=t0_s, upper=t1_s)
    end = trace["end_s"].clip(lower=t0_s, upper=t1_s)
    out = trace.assign(start_s=start, end_s=end)
    return out[out["end_s"] > out["start_s"]]


def busy_cpu_levels(trace: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Step function of the number of busy CPUs.

    Returns
    -------
    times, levels:
        ``levels[i]`` busy CPUs during ``[times[i], times[i+1])``; the last level is 0.
    """
    busy = trace[trace["busy"]]
    return interval_levels(busy["start_s"].to_numpy(), busy["end_s"].to_numpy())


def interval_levels(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step function of how many of the intervals ``starts[i]..ends[i]`` are open.

    Returns ``times, levels`` as :func:`busy_cpu_levels` does.
    """
    if len(starts) == 0:
        return np.zeros(0), np.zeros(0)
    times = np.concatenate([starts, ends])
    delta = np.concatenate([np.ones(len(starts)), -np.ones(len(ends))])
    order = np.argsort(times, kind="stable")
    times, delta = times[order], delta[order]
    unique, index = np.unique(times, return_index=True)
    levels = np.cumsum(delta)
    # the level after all events at the same instant
    last_of_group = np.append(index[1:], len(times)) - 1
    return unique, levels[last_of_group]


def cumulative_time(times: np.ndarray, flag: np.ndarray) -> Callable[[Any], Any]:
    """``F(t)``: time spent with ``flag`` true up to ``t``, for a step function on ``times``.

    ``flag[i]`` holds during ``[times[i], times[i+1])``; ``F`` takes scalars or arrays.
    """
    if len(times) < 2:
        return lambda t: np.zeros_like(np.asarray(t, dtype=float))
    acc = np.concatenate([[0.0], np.cumsum(np.diff(times) * flag[:-1])])

    def at(t):
        step = np.searchsorted(times, t, side="right") - 1  # -1: before the first event
        i = np.clip(step, 0, len(times) - 1)
        inside = np.where((step >= 0) & (i < len(times) - 1), flag[i], False)
        return acc[i] + inside * (t - times[i])

    return at


def all_busy_time(trace: pd.DataFrame, cpus: int) -> Callable[[Any], Any]:
    """``F(t)``: time up to ``t`` during which all ``cpus`` CPUs were busy."""
    times, levels = busy_cpu_levels(trace)
    return cumulative_time(times, levels >= cpus)


def window_share(cumulative: Callable[[Any], Any], t0_s: float, t1_s: float) -> float:
    """Share of ``[t0_s, t1_s]`` covered by a cumulative time function."""
    window = t1_s - t0_s
    return float((cumulative(t1_s) - cumulative(t0_s)) / window) if window > 0 else 0.0


def parallel_fraction(trace: pd.DataFrame, cpus: int, t0_s: float, t1_s: float) -> float:
    """Share of ``[t0_s, t1_s]`` during which all ``cpus`` CPUs are busy."""
    return window_share(all_busy_time(trace, cpus), t0_s, t1_s)
