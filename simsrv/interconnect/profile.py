"""An interconnect profile: what one message between two cluster nodes costs [V §3-4].

A message of ``m`` bytes from node ``a`` to node ``b`` costs (see docs/interconnect.md):

* ``send_cpu_us`` of CPU at ``a`` (the send call: system call, copy into the kernel, and for
  libVIP the hand-off to its send thread), then
* ``m / bandwidth_bytes_per_s`` on the links, shared with every other message in flight on
  ``a``'s or ``b``'s attachment (:mod:`simsrv.interconnect.links`), then
* ``latency_us`` (NIC, switch and interrupt delay: the message is in no CPU's hands), then
* ``recv_cpu_us`` of CPU at ``b`` (the receive call, and for libVIP its receive thread).

On an idle link the receiver has it ``send_cpu_us + m / bandwidth + latency_us +
recv_cpu_us`` after it was posted.  ``semantics`` says who pays the CPU: ``async`` (libVIP:
``VipPostSend`` returns at once; a send thread and a receive thread per virtual interface do
the work, so a program computes or posts a receive meanwhile [V §3.1]) or ``sync`` (plain TCP
sockets: ``send()`` and ``recv()`` block the calling thread [V §4.1]).

Profiles are data files in ``profiles/`` beside this module, like the platforms.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field

from simsrv.core.errors import InputError
from simsrv.core.paths import exists
from simsrv.core.strict_model import StrictModel, validate
from simsrv.core.toml_file import read_toml

PROFILE_DIR = Path(__file__).with_name("profiles")

MAX_BANDWIDTH_BYTES_PER_S = 1.25e10
"""100 Gbit/s: a larger bandwidth is a unit mistake for any modelled network."""

MIN_BANDWIDTH_BYTES_PER_S = 1e3
"""1 kB/s (8 kbit/s, below any modem of the period): a smaller bandwidth is a unit mistake,
and would make one message of the ping-pong last for ages of simulated time."""


class InterconnectProfile(StrictModel):
    """Costs of one message on a modelled interconnect (times in microseconds, sizes in
    bytes, bandwidth in bytes per second)."""

    name: str
    description: str = ""
    source: str = Field("", description="where the numbers come from")
    semantics: Literal["async", "sync"] = Field(
        description="async: post, then wait (libVIP); sync: blocking send and recv (sockets)"
    )
    send_cpu_us: float = Field(ge=0, le=1e6, description="sender CPU per message, us")
    recv_cpu_us: float = Field(ge=0, le=1e6, description="receiver CPU per message, us")
    latency_us: float = Field(ge=0, le=1e6, description="wire, switch and NIC delay, us")
    bandwidth_bytes_per_s: float = Field(
        ge=MIN_BANDWIDTH_BYTES_PER_S,
        le=MAX_BANDWIDTH_BYTES_PER_S,
        description="bytes per second one node's attachment carries, both directions together",
    )

    @property
    def bytes_per_us(self) -> float:
        """The bandwidth in bytes per microsecond (the simulation's unit)."""
        return self.bandwidth_bytes_per_s / 1e6

    def idle_time_us(self, message_bytes: float) -> float:
        """Post-to-received time of one message alone on idle links, us."""
        return (
            self.send_cpu_us
            + message_bytes / self.bytes_per_us
            + self.latency_us
            + self.recv_cpu_us
        )


def profile_names() -> list[str]:
    """Names of the built-in interconnect profiles."""
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


def profile_path(name_or_path: str, directory: Path | None = None) -> Path:
    """The file of a profile given by name (in ``directory``, default the built-in ones) or by
    a path ending in ``.toml``; an unknown name is an :class:`InputError` naming the allowed
    ones."""
    path = Path(name_or_path)
    if path.suffix == ".toml":
        return path
    folder = directory or PROFILE_DIR
    path = folder / f"{name_or_path}.toml"
    if not exists(path):
        names = sorted(p.stem for p in folder.glob("*.toml"))
        raise InputError(
            f"profile: unknown interconnect profile {name_or_path!r}; allowed: "
            f"{', '.join(names)} or a path to a .toml file"
        )
    return path


@lru_cache(maxsize=64)
def load_profile(name_or_path: str, directory: Path | None = None) -> InterconnectProfile:
    """Load an interconnect profile by built-in name or path (errors name the field as
    ``profile[FILE].FIELD``)."""
    path = profile_path(name_or_path, directory)
    return validate(InterconnectProfile, read_toml(path, "profile"), f"profile[{path.name}]")
