"""Cost of server work in microseconds, from workload counts and the platform's cost table.

These functions are the cost model of [MODEL §1] (equations in ``docs/model.md``); strategies
decide where each piece runs.  They take counts (scalars or numpy arrays of per-group counts,
so that a strategy can cost all its groups at once).
"""

from __future__ import annotations

from simsrv.platforms.profile import Costs


def world_us(costs: Costs, entities):
    """World physics + game logic: ``world_base + world_per_entity * entities``."""
    return costs.world_base + costs.world_per_entity * entities


def net_recv_us(costs: Costs, messages):
    """Receive system calls: ``net_recv_per_message * messages``."""
    return costs.net_recv_per_message * messages


def request_us(costs: Costs, messages, commands, range_entities):
    """Executing packets: per packet, per user command, per entity in the action ranges."""
    return (
        costs.request_per_message * messages
        + costs.request_per_command * commands
        + costs.request_per_range_entity * range_entities
    )


def reply_info_us(costs: Costs, connected):
    """Stage-3 part 1 (scores and broadcast messages to every connected client), per frame:
    ``reply_info_per_client * connected``."""
    return costs.reply_info_per_client * connected


def reply_us(costs: Costs, replies, visible_entities, pvs_rooms):
    """Building replies: per reply, per entity in the replied clients' visible sets, per room
    in their PVS rows."""
    return (
        costs.reply_per_client * replies
        + costs.reply_per_visible_entity * visible_entities
        + costs.reply_per_pvs_room * pvs_rooms
    )


def net_send_us(costs: Costs, replies):
    """Send system calls: ``net_send_per_reply * replies``."""
    return costs.net_send_per_reply * replies
