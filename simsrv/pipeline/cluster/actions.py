"""Cross-border actions: a command that modifies an entity another node owns costs a request
to that node and its reply (a round trip on the interconnect), with ``cluster.remote_actions``.

Why a mechanism apart from mirroring (docs/cluster.md).  Mirroring copies the state of the
entities near a border to the neighbouring node every frame: enough for what a command *reads*
(``PM_PlayerMove`` collides with the nearby entities as obstacles, the reply shows them).  A
command that *writes* another entity needs its owner: in QuakeWorld a shot is a hitscan
``traceline`` in ``SV_RunCmd`` whose hit calls ``T_Damage`` on the target (its health, its
death and respawn); only the target's owner may change it, or two nodes would hold two
versions of it.

Model.  The modelled writing action is the shot (the ``shot`` flag of a packet; the other
actions, walking and jumping, move only the sender): it aims at the nearest other player in
the shooter's action range ``L_a`` at the packet's tick (:func:`simsrv.world.combat.aim`, the
rule of ``players.respawn``; map entities are not targets; with no player in range it hits
the world and costs nothing).  When the node that reads the packet is not the owner of the
target at that tick, the action is a cross-border action:

* at the start of the frame that reads the packets, the node posts to each owner one
  ``action`` message of ``action_bytes`` per action for it (the commands and targets, batched
  per destination as the mirrors are);
* the owner answers at the start of its first frame after the request arrived: one
  ``action_reply`` message of ``action_bytes`` per action (the outcome: hit or not, damage,
  the target's new state), batched per request;
* each message costs what every message costs (:mod:`simsrv.pipeline.cluster.exchange`: send CPU at
  its sender, receive CPU at its receiver, its bytes on the links, the latency).  Applying the
  damage costs the owner no modelled CPU (a few field updates), and the shooter's node has
  already run the command (its trace against the mirrored copy) in its request stage.

The nodes never wait for a reply (no barrier, as for mirrors): the outcome reaches the shooter
in a later reply, ``request posted -> reply received`` later (``action_round_trip_ms``: the
two transfers plus the owner's wait for its next frame).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simsrv.pipeline.cluster.exchange import Exchange
from simsrv.pipeline.cluster.zones import ZonedWorld


@dataclass
class RemoteActions:
    """Posts the cross-border actions' requests and replies of every node."""

    zoned: ZonedWorld
    exchange: Exchange
    action_bytes: int
    replied: dict[int, int] = field(default_factory=dict)
    """``{reply message id: request message id}`` (when the exchange keeps its messages)."""

    def answer(self, node: int, now: float) -> int:
        """At ``node``'s frame start ``now`` s: reply to every request it received; returns
        the actions answered."""
        answered = 0
        for request in self.exchange.take_requests(node):
            size = self.action_bytes * request.items
            reply = self.exchange.post(
                "action_reply", node, request.src, size, now, request.items, answers=request
            )
            if self.exchange.keep:
                self.replied[reply] = request.message_id
            answered += request.items
        return answered

    def request(self, node: int, packets: np.ndarray, now: float) -> int:
        """At ``node``'s frame start ``now`` s, reading ``packets``: post one request per
        owner of a shot's target that is not ``node``; returns the actions requested."""
        shots = packets[packets["shot"]]
        per_owner: dict[int, int] = {}
        for client, tick in zip(shots["client"].tolist(), shots["tick"].tolist(), strict=True):
            aimed = self.zoned.target_of(tick, client)
            if aimed is not None and aimed[1] != node:
                per_owner[aimed[1]] = per_owner.get(aimed[1], 0) + 1
        for owner in sorted(per_owner):
            count = per_owner[owner]
            self.exchange.post("action", node, owner, self.action_bytes * count, now, count)
        return sum(per_owner.values())
