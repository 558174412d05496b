"""Interconnect between cluster nodes: what a message costs, and the libVIP ping-pong [V].

Modules, one responsibility each:

* :mod:`.profile`: a profile (per-message CPU at each end, latency, bandwidth, async or sync
  semantics), loaded from the data files in ``profiles/``;
* :mod:`.links`: the nodes' attachments shared by the messages in flight (max-min fair,
  exact event computation);
* :mod:`.network`: post a message from node ``a`` to node ``b`` at time ``t``; learn when the
  receiver has it and what CPU each end spent (:class:`~.network.Delivery`);
* :mod:`.pingpong`: the ping-pong benchmark of [V §4.1] on the model.

See docs/interconnect.md.
"""

from simsrv.interconnect.network import Delivery, Network, send_one
from simsrv.interconnect.pingpong import PAPER_SIZES, PingpongPoint, run_pingpong, run_size
from simsrv.interconnect.profile import InterconnectProfile, load_profile, profile_names

__all__ = [
    "PAPER_SIZES",
    "Delivery",
    "InterconnectProfile",
    "Network",
    "PingpongPoint",
    "load_profile",
    "profile_names",
    "run_pingpong",
    "run_size",
    "send_one",
]
