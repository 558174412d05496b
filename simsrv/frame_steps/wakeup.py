"""The wake-up latency of an idle server: a constant, or a draw from a measured distribution.

A server blocked in ``select()`` starts its frame some time after the packet that wakes it
(the kernel waking the thread and, on a virtual machine, its idle virtual CPU): the
platform's ``wakeup_latency_us``, or, with ``wakeup_latency_quantiles_us`` (n values, the
quantiles of a measured sample at probabilities (i + 1/2) / n), one of the n drawn with equal
probability at each wake-up: the distribution of the sample with its extreme 1/(2n) tails
cut (a sample's mean can hang on a few virtual-CPU stalls of milliseconds, which a single run
may or may not see).

The uniforms come from a counter-based generator (SplitMix64 of the run's ``wakeup`` seed
plus the wake-up's index times the golden-ratio increment, Steele, Lea and Flood, *Fast
splittable pseudorandom number generators*, OOPSLA 2014), so the k-th wake-up's latency
depends on the seed and ``k`` only: the compiled loop and the Python loop draw the same
latencies whichever of them wakes the server, and no generator state crosses between them.
The registers are the frame loop's (:mod:`simsrv.frame_steps.state`: ``WAKES``,
``WAKE_SEED``, ``WAKE_POINTS``, ``WAKEUP`` and the quantiles after the float registers).
"""

from __future__ import annotations

import numpy as np

from simsrv.core.compiled import compiled
from simsrv.frame_steps.state import (
    FLOAT_REGISTERS,
    INT_REGISTERS,
    WAKE_POINTS,
    WAKE_SEED,
    WAKES,
    WAKEUP,
)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_UNIT = 1.0 / 9007199254740992.0  # 2 ** -53


def registers(latency_s: float, quantiles_s, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Fresh ``(ints, floats)`` registers of the frame loop's layout holding a wake-up
    latency: ``latency_s`` (constant) or the ``quantiles_s`` (s) drawn with ``seed``."""
    quantiles = np.asarray(quantiles_s, dtype=float)
    ints = np.zeros(INT_REGISTERS, np.int64)
    floats = np.zeros(FLOAT_REGISTERS + len(quantiles))
    set_wakeup(ints, floats, latency_s, quantiles, seed)
    return ints, floats


def set_wakeup(ints: np.ndarray, floats: np.ndarray, latency_s, quantiles_s, seed: int) -> None:
    """Write the wake-up latency into registers whose floats have room for the quantiles."""
    quantiles = np.asarray(quantiles_s, dtype=float)
    floats[WAKEUP] = latency_s
    ints[WAKES], ints[WAKE_SEED], ints[WAKE_POINTS] = 0, seed, len(quantiles)
    floats[FLOAT_REGISTERS : FLOAT_REGISTERS + len(quantiles)] = quantiles


@compiled
def uniform(seed, k):
    """The ``k``-th uniform in [0, 1) of ``seed`` (SplitMix64's output function)."""
    z = np.uint64(seed) + np.uint64(k + 1) * _GOLDEN
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    z = z ^ (z >> _S31)
    return np.float64(z >> _S11) * _UNIT


@compiled
def wakeup_s(ints, floats):
    """The next wake-up's latency, s (module docstring); counts the draw."""
    points = ints[WAKE_POINTS]
    if points == 0:
        return floats[WAKEUP]
    u = uniform(ints[WAKE_SEED], ints[WAKES])
    ints[WAKES] += 1
    return floats[FLOAT_REGISTERS + min(int(u * points), points - 1)]
