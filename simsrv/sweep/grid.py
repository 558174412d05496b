"""The grid of a strategy comparison: one validated scenario per (strategy, CPUs, clients, seed).

Every point starts from the same base scenario (a TOML file or dict plus ``--set``
overrides) and changes four fields:

* ``server.strategy``; the base scenario's ``[server.options]`` are kept for its own strategy,
  any other strategy runs with its registered defaults (the calibrated final versions);
* ``machine.cpus`` and ``players.count``;
* ``run.seed`` = the base seed + the seed index (0, 1, ..., seeds - 1), so that seed index
  ``i`` draws the same map, players and packets for every strategy (common random numbers).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from simsrv.core.defaults import DEFAULT_STRATEGIES
from simsrv.core.errors import InputError
from simsrv.pipeline.load import build_scenario, load_raw
from simsrv.scenario.schema import Scenario
from simsrv.strategies import STRATEGIES


@dataclass(frozen=True)
class GridPoint:
    """One run of the grid.  ``seed_index`` counts from 0; ``seed`` is the run's root seed."""

    strategy: str
    cpus: int
    clients: int
    seed_index: int
    seed: int

    def label(self) -> str:
        """Short text for progress lines."""
        return f"{self.strategy} cpus={self.cpus} clients={self.clients} seed={self.seed}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class GridRun:
    """A grid point with its validated scenario."""

    point: GridPoint
    scenario: Scenario


def base_dict(source: str | Path | dict[str, Any] | None, overrides: Sequence[str]) -> dict:
    """The base scenario as a decoded dict with the overrides applied; a bad base scenario
    raises :class:`InputError` here, once, before any point is built."""
    raw = load_raw(source, overrides)
    build_scenario(copy.deepcopy(raw))
    return raw


def build_grid(
    base: dict[str, Any],
    strategies: Sequence[str] = DEFAULT_STRATEGIES,
    cpus: Sequence[int] | None = None,
    clients: Sequence[int] | None = None,
    seeds: int = 3,
    duration_s: float | None = None,
) -> list[GridRun]:
    """Every point of the grid, validated, strategy-major (then CPUs, clients, seed).

    ``cpus`` and ``clients`` default to the base scenario's values; ``duration_s`` replaces the
    measured window's length when given.  Raises :class:`InputError` naming the bad option.
    """
    for name in strategies:
        STRATEGIES.get(name, "--strategies")
    if len(set(strategies)) != len(strategies):
        raise InputError(f"--strategies: names must be distinct, got {','.join(strategies)}")
    if seeds < 1:
        raise InputError(f"--seeds: must be a whole number >= 1, got {seeds}")
    if duration_s is not None and duration_s <= 0:
        raise InputError(f"--duration-s: must be a number of seconds > 0, got {duration_s:g}")
    scenario = build_scenario(copy.deepcopy(base))
    cpus = list(cpus) if cpus else [scenario.machine.cpus]
    clients = list(clients) if clients else [scenario.players.count]
    _check_counts("--cpus", cpus)
    _check_counts("--clients", clients)
    base_strategy = scenario.server.strategy
    grid = []
    for strategy in strategies:
        for n_cpus in cpus:
            for n_clients in clients:
                for i in range(seeds):
                    point = GridPoint(strategy, n_cpus, n_clients, i, scenario.run.seed + i)
                    raw = point_dict(base, point, keep_options=strategy == base_strategy)
                    if duration_s is not None:
                        raw.setdefault("run", {})["duration_s"] = duration_s
                    grid.append(GridRun(point, _validated(raw, point)))
    return grid


def point_dict(base: dict[str, Any], point: GridPoint, keep_options: bool) -> dict[str, Any]:
    """The base scenario dict changed to ``point``."""
    raw = copy.deepcopy(base)
    server = raw.setdefault("server", {})
    server["strategy"] = point.strategy
    if not keep_options:
        server.pop("options", None)
    raw.setdefault("machine", {})["cpus"] = point.cpus
    raw.setdefault("players", {})["count"] = point.clients
    raw.setdefault("run", {})["seed"] = point.seed
    return raw


def _validated(raw: dict[str, Any], point: GridPoint) -> Scenario:
    try:
        return build_scenario(raw)
    except InputError as error:
        raise InputError(f"{point.label()}: {error}") from None


def _check_counts(flag: str, values: Sequence[int]) -> None:
    for value in values:
        if value < 1:
            raise InputError(f"{flag}: every value must be a whole number >= 1, got {value}")
    if len(set(values)) != len(values):
        raise InputError(f"{flag}: values must be distinct, got {','.join(map(str, values))}")
