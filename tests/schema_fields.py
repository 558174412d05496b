"""Every field of the scenario schema, for tests that generate scenarios.

A :class:`SchemaField` is a dotted key (``players.count``), the ``--set`` overrides that make it
apply (``map.kind="rooms"`` for a rooms parameter), and its pydantic annotation and metadata.
Map kinds that need a file (``bsp``, ``file``) are left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from simsrv.platforms.profile import Costs
from simsrv.scenario.schema import (
    ClientsSection,
    MachineSection,
    PlayersSection,
    RunSection,
    ServerSection,
)
from simsrv.strategies import STRATEGIES
from simsrv.world.maps import MAP_KINDS
from simsrv.world.mobility import MOBILITY_MODELS

FILE_MAP_KINDS = {"bsp", "file"}
# fields holding a registered name or a nested table: covered by the registries below
NOT_PLAIN = {"players.mobility", "players.behaviour", "server.strategy", "server.options"}
NOT_PLAIN |= {"machine.costs", "machine.platform"}


@dataclass(frozen=True)
class SchemaField:
    """One scenario field: ``key`` is its dotted name, ``context`` the overrides it needs."""

    key: str
    context: tuple[str, ...]
    annotation: Any
    info: FieldInfo

    def bound(self, name: str) -> float | None:
        """The ``ge``/``gt``/``le``/``lt`` bound of the field, or None."""
        for item in self.info.metadata:
            if hasattr(item, name):
                return getattr(item, name)
        return None


def _fields(model: type[BaseModel], prefix: str, context: tuple[str, ...]) -> list[SchemaField]:
    return [
        SchemaField(f"{prefix}.{name}", context, info.annotation, info)
        for name, info in model.model_fields.items()
        if f"{prefix}.{name}" not in NOT_PLAIN
    ]


def schema_fields() -> list[SchemaField]:
    """Every field of every section, map kind, mobility model, strategy and cost."""
    out: list[SchemaField] = []
    for prefix, model in [
        ("run", RunSection),
        ("players", PlayersSection),
        ("clients", ClientsSection),
        ("server", ServerSection),
        ("machine", MachineSection),
    ]:
        out += _fields(model, prefix, ())
    for kind in MAP_KINDS.names():
        if kind not in FILE_MAP_KINDS:
            params = MAP_KINDS.get(kind, "map.kind").params
            out += _fields(params, "map", (f'map.kind="{kind}"',))
    for name in MOBILITY_MODELS.names():
        params = MOBILITY_MODELS.get(name, "players.mobility").params
        out += _fields(params, "players.behaviour", (f'players.mobility="{name}"',))
    for name in STRATEGIES.names():
        options = STRATEGIES.get(name, "server.strategy").options
        out += _fields(options, "server.options", (f'server.strategy="{name}"',))
    out += _fields(Costs, "machine.costs", ())
    return out


def is_number(field: SchemaField) -> bool:
    """An int or float field (possibly in a union with a literal, as abdelkhalek's threads)."""
    return re.search(r"\b(int|float)\b", str(field.annotation)) is not None


def list_depth(field: SchemaField) -> int:
    """How many lists deep the field's numbers are (``list[list[float]]``: 2)."""
    return str(field.annotation).count("list[")
