"""Defaults that the command line's help texts show, in a module without heavy imports.

The modules that use these values import them from here, so that ``simsrv CMD --help`` can
name them without loading numpy, pandas, scipy or matplotlib (see docs/performance.md).
"""

from __future__ import annotations

DEFAULT_STRATEGIES = ("sequential", "abdelkhalek", "area-quadrant", "bsp-group")
"""``simsrv compare``: the four servers of the source papers, in the order the comparison shows
them."""

SWEEP_BACKENDS = ("local", "dask")
"""``simsrv sweep --backend``: where runs execute."""

MIN_REPLY_RATIO = 0.8
"""``simsrv capacity``: a met count answers at least this share of the offered packets/s."""

MAX_DROPPED = 0.2
"""``simsrv capacity``: a met count drops at most this share of the packets that reached the
socket."""

VALIDATION_SEEDS = 5
"""``simsrv validate`` and ``simsrv calibrate``: seeds per reference row."""

QUICK_SEEDS = 3
"""``simsrv validate --quick``: seeds per reference row."""

QUICK_DURATION_S = 3.0
"""``simsrv validate --quick``: simulated seconds per run (capacity searches included)."""

CALIBRATED_PLATFORMS = (
    "abdelkhalek2004-xeon-ht",
    "area2004-ultrasparc",
    "cordeiro2007-xeon",
    "libvip2004",
    "this-machine-mvdsv",
    "this-machine-quaketm",
)
"""``simsrv calibrate PLATFORM``: the platforms that have a calibrator (sorted; each module of
:mod:`simsrv.calibration` registers one, and a test checks that the two lists agree)."""

OVERLOAD_REPLY_RATIO = 0.95
"""``simsrv compare`` and ``simsrv sweep``: a point whose mean replies/s fall below this share of
the offered packets/s is flagged ``overloaded``."""

OVERLOAD_DROPPED = 0.01
"""``simsrv compare`` and ``simsrv sweep``: a point whose socket drops more than this share of
the arrived packets is flagged ``overloaded``."""

MIN_CI_SEEDS = 3
"""Fewer seeds than this per point print a warning beside the 95 % confidence interval: with 2
seeds Student's t is 12.7 and the interval says little."""
OVERLOAD_RESPONSE_FRAMES = 1.0
"""The ``overloaded`` flag of the summary tables: a point whose 95th-percentile response time
exceeds this many client frames (``1 / clients.rate_hz``: a player sends its next packet before
the answer to this one) is flagged (:mod:`simsrv.sweep.overload`)."""
MAX_SEEDS = 10_000
"""The most seeds per point of a sweep file or a command's ``--seeds``: every run's scenario
is built before anything runs (~0.25 ms each), so an unbounded count would hang the loading."""
MAX_CLIENTS = 10_000_000
"""The most clients a capacity search tries (``players.count``'s bound)."""
