"""Reference rows measured on the interconnect model's ping-pong [V §4.1], not on a scenario.

A row with ``pingpong = PROFILE`` names one of these quantities (deterministic: every seed
gives the same value):

* ``pingpong_bandwidth_MB_per_s``: the bandwidth ``m / t_c`` at ``message_bytes``, MB/s;
* ``pingpong_peak_message_bytes``: the size of the paper's grid
  (:data:`~simsrv.interconnect.pingpong.PAPER_SIZES`) up to ``message_bytes`` with the largest
  bandwidth, bytes;
* ``pingpong_bandwidth_ratio``: the bandwidth at ``message_bytes`` over ``versus``'s;
* ``pingpong_crossover_message_bytes``: the smallest size (to 1 byte, from the grid's
  smallest up to ``message_bytes``) at which the profile's bandwidth falls below ``versus``'s;
  the grid's smallest size when it is behind from the start, ``message_bytes`` when it never
  falls behind.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from simsrv.interconnect.pingpong import ITERATIONS, PAPER_SIZES, run_size
from simsrv.interconnect.profile import InterconnectProfile, load_profile

PINGPONG_QUANTITIES = (
    "pingpong_bandwidth_MB_per_s",
    "pingpong_peak_message_bytes",
    "pingpong_bandwidth_ratio",
    "pingpong_crossover_message_bytes",
)
NEEDS_VERSUS = ("pingpong_bandwidth_ratio", "pingpong_crossover_message_bytes")


@dataclass(frozen=True)
class PingpongJob:
    """One ping-pong quantity of ``profile`` (a name, looked up in ``profile_dir`` when given:
    ``simsrv calibrate`` checks a new fit this way)."""

    profile: str
    quantity: str
    message_bytes: int
    versus: str = ""
    profile_dir: str | None = None

    def execute(self) -> dict[str, float]:
        """``{quantity: value}``."""
        folder = Path(self.profile_dir) if self.profile_dir else None
        profile = load_profile(self.profile, folder)
        other = load_profile(self.versus, folder) if self.versus else None
        return {self.quantity: measure(self.quantity, profile, self.message_bytes, other)}


def bandwidth(profile: InterconnectProfile, message_bytes: int) -> float:
    """``m / t_c`` of the ping-pong at one size, MB/s."""
    return run_size(profile, message_bytes, ITERATIONS).bandwidth_MB_per_s


def measure(
    quantity: str,
    profile: InterconnectProfile,
    message_bytes: int,
    versus: InterconnectProfile | None = None,
) -> float:
    """The value of a ping-pong quantity (see the module docstring)."""
    if quantity == "pingpong_bandwidth_MB_per_s":
        return bandwidth(profile, message_bytes)
    if quantity == "pingpong_peak_message_bytes":
        sizes = [m for m in PAPER_SIZES if m <= message_bytes]
        return float(max(sizes, key=lambda m: bandwidth(profile, m)))
    assert versus is not None, quantity
    if quantity == "pingpong_bandwidth_ratio":
        return bandwidth(profile, message_bytes) / bandwidth(versus, message_bytes)
    if quantity == "pingpong_crossover_message_bytes":
        return float(crossover(profile, versus, message_bytes))
    raise KeyError(quantity)


def crossover(profile: InterconnectProfile, versus: InterconnectProfile, upto: int) -> int:
    """The smallest size at which ``profile`` is slower than ``versus`` (see the module
    docstring): the first grid size where it is behind, then bisection on whole bytes."""

    def behind(m: int) -> bool:
        return bandwidth(profile, m) < bandwidth(versus, m)

    sizes = [m for m in PAPER_SIZES if m < upto] + [upto]
    if behind(sizes[0]):
        return sizes[0]
    for ahead, late in zip(sizes, sizes[1:], strict=False):
        if behind(late):
            lo, hi = ahead, late  # not behind at lo, behind at hi
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if behind(mid) else (mid, hi)
            return hi
    return upto
