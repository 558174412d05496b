"""Planning and executing one hand-made frame of a strategy, for exact timeline tests.

Positions are given directly (a fake world on the cube map), costs are all zero except the
ones a test names, so every interval of the resulting trace is predictable by hand.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simsrv.machine import Machine
from simsrv.pipeline.load import load_scenario
from simsrv.platforms.profile import Costs, load_platform
from simsrv.strategies import STRATEGIES, Strategy, StrategyContext
from simsrv.workload.frame import FrameWorkload
from simsrv.workload.messages import MESSAGE_DTYPE
from simsrv.world.maps.cube import CubeParams, build_cube


class FakeWorld:
    """What a strategy asks of a world: the map, player count and positions (every tick)."""

    def __init__(self, positions: np.ndarray) -> None:
        self.map = build_cube(CubeParams(), np.random.default_rng(0))
        self._positions = positions

    @property
    def players(self) -> int:
        return len(self._positions)

    @property
    def entity_count(self) -> int:
        return self.players + len(self.map.entities)

    def keep_neighbours(self, ticks: int) -> None:
        pass

    def positions(self, tick: int) -> np.ndarray:
        return self._positions


def floor(xy) -> np.ndarray:
    """(N, 3) positions standing on the cube's floor at the given (x, y)."""
    return np.array([[x, y, 24.0] for x, y in xy], dtype=float)


def make_strategy(
    name: str, positions, options: dict, cpus: int, costs: dict, platform_fields: dict | None = None
) -> Strategy:
    """Strategy ``name`` on a world of ``positions``, with only ``costs`` non-zero (and the
    Cordeiro platform's other fields, ``platform_fields`` replaced)."""
    scenario = load_scenario(
        None, [f"server.strategy={name}", f"machine.cpus={cpus}", f"players.count={len(positions)}"]
    )
    zero = dict.fromkeys(Costs.model_fields, 0.0)
    base = load_platform("cordeiro2007-xeon")
    platform = base.model_copy(
        update={"costs": Costs(**{**zero, **costs}), **(platform_fields or {})}
    )
    kind = STRATEGIES.get(name, "server.strategy")
    context = StrategyContext(
        scenario, platform, cpus, FakeWorld(positions), np.random.default_rng(0)
    )
    return kind.create(kind.options(**options), context)


def frame_of(clients, range_count=None, reply_visible=None) -> FrameWorkload:
    """A frame with one packet per entry of ``clients`` (one command each) and a reply to each
    distinct client."""
    messages = np.zeros(len(clients), dtype=MESSAGE_DTYPE)
    messages["client"] = clients
    messages["commands"] = 1
    messages["range_count"] = 1 if range_count is None else range_count
    replied = np.unique(np.array(clients, dtype=np.int32))
    zeros = np.zeros(len(replied), np.int32)
    visible = zeros if reply_visible is None else np.asarray(reply_visible, np.int32)
    total_range = int(messages["range_count"].sum())
    return FrameWorkload(
        0,
        0.0,
        messages,
        replied,
        visible,
        zeros,
        0,
        False,
        0,
        len(clients),
        total_range,
        int(visible.sum()),
        0,
    )


def execute(strategy: Strategy, frame: FrameWorkload, cpus: int) -> tuple[float, pd.DataFrame]:
    """Run the frame's plan from t = 0; return (frame end in us, trace)."""
    machine = Machine(cpus)
    end_s = machine.execute(strategy.plan(frame), 0, 0.0)
    return end_s * 1e6, machine.trace.to_frame()
