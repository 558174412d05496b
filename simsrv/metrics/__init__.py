"""Metrics derived from the recorded facts (frames, trace, packet arrivals)."""

from simsrv.metrics.summary import summarize
from simsrv.metrics.timeline import busy_cpu_levels, clip_intervals, parallel_fraction

__all__ = ["busy_cpu_levels", "clip_intervals", "parallel_fraction", "summarize"]
