"""A hypothesis strategy for scenario files built from the schema.

:func:`scenario_files` draws a map kind, a mobility model and a strategy, then a few fields of
the schema (:mod:`tests.schema_fields`) that apply to them, each set to a valid value (inside
the field's bounds) or an invalid one (below or above a bound, the wrong type, a boolean for a
number, NaN or infinity, an unknown choice), and renders the scenario as TOML text.

Runs stay short: the measured window and warm-up are at most 0.3 s unless a drawn value says
otherwise, and the fields that make a run expensive (players, CPUs, packet rate, entities)
have their *valid* values capped (:data:`VALID_CAPS`); their invalid values are not capped.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
from typing import Any, Literal, Union, get_args, get_origin

from hypothesis import strategies as st

from simsrv.machine.engines import ENGINES
from simsrv.strategies.grouping.balancers import BALANCERS
from tests.schema_fields import SchemaField, list_depth, schema_fields

FIELDS = schema_fields()
KINDS = sorted({f.context[0] for f in FIELDS if f.context and f.context[0].startswith("map.")})
MOBILITIES = sorted({f.context[0] for f in FIELDS if f.context and "mobility" in f.context[0]})
STRATEGIES = sorted({f.context[0] for f in FIELDS if f.context and "strategy" in f.context[0]})
STRATEGIES.append('server.strategy="sequential"')  # no options: no field carries it

# the largest *valid* value drawn for fields that drive the cost of a run
VALID_CAPS = {
    "run.duration_s": 0.3,
    "run.warmup_s": 0.3,
    "players.count": 300,
    "machine.cpus": 32,
    "clients.rate_hz": 100.0,
    "server.max_messages_per_frame": 1000,
    "server.options.threads": 32,
    "server.options.max_workers": 32,
    "map.map_entities": 500,
    "map.rows": 8,
    "map.cols": 8,
    "map.hotspots": 20,
    "map.count": 20,
    "map.nav_samples": 2000,
    "map.rooms_per_side": 8,
    "clients.socket_buffer_messages": 10_000,
    "players.behaviour.settle_s": 60.0,  # pre-run motion: 36,000 s (allowed) takes minutes
}
BASE = {
    "run": {"duration_s": 0.1, "warmup_s": 0.05},
    "players": {"count": 40},
}


def _bound(field: SchemaField, *names: str) -> float | None:
    for name in names:
        value = field.bound(name)
        if value is not None:
            return value
    return None


def _numbers(field: SchemaField, integer: bool) -> tuple[st.SearchStrategy, st.SearchStrategy]:
    """(valid, invalid) strategies of a bounded number field."""
    lo = _bound(field, "ge", "gt")
    hi = _bound(field, "le", "lt")
    lo_open, hi_open = field.bound("gt") is not None, field.bound("lt") is not None
    cap = VALID_CAPS.get(field.key)
    top = hi if cap is None else min(cap, hi if hi is not None else math.inf)
    bad: list[st.SearchStrategy] = [
        st.sampled_from([True, False, "x", "", math.nan, math.inf, -math.inf, [1]])
    ]
    if integer:
        low = int(lo) + lo_open if lo is not None else -(2**31)
        high = int(top) - (hi_open and top == hi) if top is not None else 2**31
        valid = st.integers(low, max(low, high))
        if lo is not None:
            bad.append(st.integers(-(2**70), low - 1))
        if hi is not None:
            bad.append(st.integers(int(hi) + 1 - hi_open, 2**70))
        bad.append(st.just(low + 0.5))
    else:
        valid = st.floats(
            lo if lo is not None else -1e12,
            top if top is not None else 1e12,
            exclude_min=lo_open,
            exclude_max=hi_open and top == hi,
            allow_nan=False,
        )
        if lo is not None:
            bad.append(st.floats(max_value=lo, exclude_max=not lo_open, allow_nan=False))
        if hi is not None:
            bad.append(st.floats(min_value=hi, exclude_min=not hi_open, allow_nan=False))
    return valid, st.one_of(bad)


def values(field: SchemaField) -> tuple[st.SearchStrategy, st.SearchStrategy]:
    """(valid, invalid) value strategies of one field."""
    annotation = field.annotation
    origin = get_origin(annotation)
    if annotation is bool:
        return st.booleans(), st.sampled_from([1, 0, "yes", 2.5])
    if origin is Literal:
        return st.sampled_from(get_args(annotation)), st.sampled_from(["nope", 3, True, 1.5])
    members = get_args(annotation)
    if origin in (Union, types.UnionType) and type(None) in members:  # optional: its member
        (inner,) = [m for m in members if m is not type(None)]
        return values(dataclasses.replace(field, annotation=inner))
    if origin is Union:  # abdelkhalek's threads: a count or "per-client"
        return (
            st.one_of(st.integers(0, 32), st.just("per-client")),
            st.sampled_from([-1, 1025, "all", True, 2.5]),
        )
    if annotation in (int, float):
        return _numbers(field, annotation is int)
    if field.key == "clients.send_times_file":  # a path: '' (none) or a readable table
        return st.just(""), st.sampled_from(["nope", 3, "x" * 5000])
    if annotation is str:
        registries = {"server.options.balancer": BALANCERS, "machine.engine": ENGINES}
        registry = registries.get(field.key)
        names = registry.names() if registry else ["cube", "rooms"]
        return st.sampled_from(names), st.sampled_from(["", "nope", "hotspots", 3])
    if list_depth(field) == 1:
        return (
            st.lists(_list_items(annotation), max_size=4),
            st.lists(st.sampled_from([-1.0, math.nan, "x", True]), min_size=1, max_size=3),
        )
    if list_depth(field) == 2:
        point = st.lists(st.floats(-1000, 1000), min_size=0, max_size=5)
        return st.lists(point, max_size=3), st.sampled_from([[[math.nan] * 4], [["x"]], [1.0]])
    # a table of anything (hotspots' base_params)
    return st.sampled_from([{}, {"size": 1500.0}]), st.sampled_from([{"nope": 1}, 3])


def _list_items(annotation: Any) -> st.SearchStrategy:
    """Valid items of a list of numbers: 0 to 10, or below the items' ``lt``/``le`` bound
    (``machine.background``: each share < 1)."""
    (item,) = get_args(annotation)
    metadata = [m for info in get_args(item)[1:] for m in getattr(info, "metadata", [])]
    for bound in metadata:
        if getattr(bound, "lt", None) is not None:
            return st.floats(0, bound.lt, exclude_max=True)
        if getattr(bound, "le", None) is not None:
            return st.floats(0, bound.le)
    return st.floats(0, 10)


@st.composite
def scenario_files(draw: st.DrawFn, max_fields: int = 4) -> tuple[str, dict[str, Any]]:
    """(TOML text, the decoded scenario it should be) of one generated scenario."""
    selectors = [draw(st.sampled_from(group)) for group in (KINDS, MOBILITIES, STRATEGIES)]
    applicable = [f for f in FIELDS if not f.context or f.context[0] in selectors]
    chosen = draw(
        st.lists(
            st.sampled_from(applicable), min_size=1, max_size=max_fields, unique_by=lambda f: f.key
        )
    )
    raw: dict[str, Any] = json.loads(json.dumps(BASE))
    for selector in selectors:
        key, _, text = selector.partition("=")
        _set(raw, key, json.loads(text))
    for field in chosen:
        valid, invalid = values(field)
        _set(raw, field.key, draw(st.one_of(valid, invalid) if draw(st.booleans()) else valid))
    return to_toml(raw), raw


def _set(raw: dict[str, Any], key: str, value: Any) -> None:
    *tables, name = key.split(".")
    node = raw
    for table in tables:
        node = node.setdefault(table, {})
    node[name] = value


def to_toml(raw: dict[str, Any]) -> str:
    """TOML text of a nested dict of plain values (tables become [headers])."""
    lines: list[str] = []

    def table(path: list[str], node: dict[str, Any]) -> None:
        scalars = {k: v for k, v in node.items() if not isinstance(v, dict) or k == "base_params"}
        if path:
            lines.append(f"[{'.'.join(path)}]")
        lines.extend(f"{key} = {toml_value(value)}" for key, value in scalars.items())
        for key, value in node.items():
            if key not in scalars:
                table([*path, key], value)

    table([], raw)
    return "\n".join(lines) + "\n"


def toml_value(value: Any) -> str:
    """One value as TOML text (a table as an inline table)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int | str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
