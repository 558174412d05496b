"""Time-weighted statistics over the interval trace.

"Number of busy CPUs" is a level that changes at interval starts and ends; the parallel-time
fraction is the share of wall time during which that level equals the number of CPUs
[P §5.2: "we utilize all available processors' processing power during 55.65% of the time"].
"""

from __future__ import annotations

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
    starts = busy["start_s"].to_numpy()
    ends = busy["end_s"].to_numpy()
    times = np.concatenate([starts, ends])
    delta = np.concatenate([np.ones(len(starts)), -np.ones(len(ends))])
    order = np.argsort(times, kind="stable")
    times, delta = times[order], delta[order]
    unique, index = np.unique(times, return_index=True)
    levels = np.cumsum(delta)
    # the level after all events at the same instant
    last_of_group = np.append(index[1:], len(times)) - 1
    return unique, levels[last_of_group]


def parallel_fraction(trace: pd.DataFrame, cpus: int, t0_s: float, t1_s: float) -> float:
    """Share of ``[t0_s, t1_s]`` during which all ``cpus`` CPUs are busy."""
    window = t1_s - t0_s
    if window <= 0:
        return 0.0
    times, levels = busy_cpu_levels(clip_intervals(trace, t0_s, t1_s))
    if len(times) < 2:
        return 0.0
    spans = np.diff(times)
    return float(spans[levels[:-1] >= cpus].sum() / window)
