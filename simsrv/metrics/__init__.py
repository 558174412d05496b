"""Metrics derived from the recorded facts (frames, trace, packet arrivals).

A run's one-row summary, which gathers them, is :mod:`simsrv.pipeline.summary`.
"""

from simsrv.metrics.timeline import busy_cpu_levels, clip_intervals, parallel_fraction

__all__ = ["busy_cpu_levels", "clip_intervals", "parallel_fraction"]
