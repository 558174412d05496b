"""Cost of server work in microseconds, from a frame's workload and the platform's cost table.

These functions are the cost model of [MODEL §1] (see ``docs/model.md`` for the equations); the
strategies decide where each piece runs.
"""

from __future__ import annotations

import numpy as np

from simsrv.platforms.profile import Costs


def world_us(costs: Costs, entities: int) -> float:
    """World physics + game logic for ``entities`` entities: ``world_base + world_per_entity*E``."""
    return costs.world_base + costs.world_per_entity * entities


def net_recv_us(costs: Costs, messages: np.ndarray) -> float:
    """Receive system calls for the packets."""
    return costs.net_recv_per_message * len(messages)


def request_us(costs: Costs, messages: np.ndarray) -> float:
    """Executing the packets: per packet, per command, per entity in the action range."""
    if len(messages) == 0:
        return 0.0
    return float(
        costs.request_per_message * len(messages)
        + costs.request_per_command * _total(messages["commands"])
        + costs.request_per_range_entity * _total(messages["range_count"])
    )


def reply_us(costs: Costs, visible: np.ndarray) -> float:
    """Building replies: per client, per entity in its visible set."""
    if len(visible) == 0:
        return 0.0
    return float(
        costs.reply_per_client * len(visible) + costs.reply_per_visible_entity * _total(visible)
    )


def net_send_us(costs: Costs, replies: int) -> float:
    """Send system calls for ``replies`` replies."""
    return costs.net_send_per_reply * replies


def _total(values: np.ndarray) -> int:
    """Sum of an integer array (np.add.reduce: no dispatch overhead on tiny arrays)."""
    return int(np.add.reduce(values))
