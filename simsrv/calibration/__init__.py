"""Calibration of platform profiles against the calibration rows of the reference table.

One module per platform registers a :class:`~simsrv.calibration.fitting.Calibrator`
(``simsrv calibrate PLATFORM``): ``cordeiro2007`` (the 2 x Xeon, fitted first: the other two
scale its costs), ``abdelkhalek2004`` and ``area2004``; ``libvip2004`` fits the interconnect
profiles (:mod:`simsrv.interconnect`) to the ping-pong of [V §4.1]; ``testbed_mvdsv`` fits
this machine's platform to a real server measured by ``simsrv testbed``; ``testbed_quaketm``
sets QuakeTM's platform from its serial runs and the primitive benchmark.
"""

from simsrv.calibration import (  # noqa: F401 (registers)
    abdelkhalek2004,
    area2004,
    cordeiro2007,
    libvip2004,
    testbed_mvdsv,
    testbed_quaketm,
)
from simsrv.calibration.fitting import CALIBRATORS, Calibrator, FitOptions, NoBracket

__all__ = ["CALIBRATORS", "Calibrator", "FitOptions", "NoBracket"]
