"""A sweep file: a base scenario, the parameters to vary, and the seeds per point.

Format (TOML; paths relative to the sweep file)::

    base = "../scenarios/cube-160.toml"   # the scenario every run starts from
    seeds = 3                              # seed index i runs with run.seed = base seed + i
                                           # (1 to 10,000; at most 100,000 runs in all)
    out = "results/sweeps/example"         # where results go (--out overrides; cwd-relative)

    [set]                                  # fixed overrides of every run
    "run.duration_s" = 2.0

    [grid]                                 # the cartesian product of these lists
    "server.strategy" = ["sequential", "bsp-group"]
    "machine.cpus" = [2, 4, 8]

    [[zip]]                                # lists of one length, varied together; each zip
    "players.count" = [160, 640]           # group is crossed with the grid and the others
    "run.duration_s" = [2.0, 1.0]

    [capacity]                             # optional: each run is a capacity search
    search = "bisect"                      # (simsrv capacity --sweep; simsrv.sweep.capacity_sweep)
    start = 128                            # first client count (x cluster.nodes if per_node)
    step = 8                               # resolution (x cluster.nodes if per_node)
    max = 4096                             # largest count tried (x cluster.nodes if per_node)
    per_node = true

A point is one combination of the varied parameters; a run is a point and a seed index.
Every run's scenario is built and validated when the sweep is loaded, before anything runs;
two runs with one scenario (values equal once validated, such as ``2`` and ``2.0``) are refused.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from simsrv.core.defaults import MAX_CLIENTS, MAX_SEEDS, MIN_REPLY_RATIO
from simsrv.core.errors import InputError
from simsrv.core.paths import is_file
from simsrv.core.strict_model import StrictModel, validate
from simsrv.core.toml_file import read_toml
from simsrv.pipeline.load import apply_override, build_scenario, load_raw
from simsrv.scenario.schema import Scenario
from simsrv.sweep.capacity import check_counts
from simsrv.sweep.records import scenario_hash

Value = str | int | float | bool
MAX_RUNS = 100_000
"""The most runs (points x seeds) a sweep file may expand to, checked before any is built
(100,000 runs load in ~25 s)."""


class CapacitySettings(StrictModel):
    """The ``[capacity]`` table: each run of the sweep is a capacity search
    (:func:`simsrv.sweep.capacity.search_capacity`) on its scenario, ``players.count`` varied."""

    search: Literal["linear", "bisect"] = "linear"
    start: int = Field(8, ge=1, le=MAX_CLIENTS)
    step: int = Field(8, ge=1, le=MAX_CLIENTS)
    max: int = Field(1024, ge=1, le=MAX_CLIENTS)
    min_reply_ratio: float = Field(MIN_REPLY_RATIO, gt=0.0, le=1.0)
    max_response_ms: float | None = Field(
        None, gt=0.0, le=1e7, description="a met count's response-time quantile at most, ms"
    )
    quantile: Literal[0.5, 0.95, 0.99] = 0.95
    per_node: bool = Field(False, description="start, step, max times cluster.nodes")

    @model_validator(mode="after")
    def _counts(self) -> CapacitySettings:
        """The bounds ``simsrv capacity --start/--step/--max`` must meet (one rule: per_node
        scales all three alike, so it cannot repair ``start > max``)."""
        check_counts(self.start, self.step, self.max, ("start", "step", "max"))
        return self


class SweepFile(StrictModel):
    """The fields of a sweep file (module docstring)."""

    base: str
    seeds: int = Field(default=1, ge=1, le=MAX_SEEDS)
    out: str = ""
    set: dict[str, Value] = {}
    grid: dict[str, list[Value]] = {}
    zip: list[dict[str, list[Value]]] = []
    capacity: CapacitySettings | None = None

    @field_validator("zip", mode="before")
    @classmethod
    def _one_table_is_one_group(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value


@dataclass(frozen=True)
class SweepRun:
    """One run: the point's parameters (dotted name -> value), its seed and its scenario."""

    params: tuple[tuple[str, Value], ...]
    seed_index: int
    seed: int
    scenario: Scenario

    @cached_property
    def scenario_hash(self) -> str:
        """The hash that identifies the run (its row's ``scenario_hash``,
        :func:`simsrv.sweep.records.scenario_hash`), computed once."""
        return scenario_hash(self.scenario)

    def label(self) -> str:
        """Short text for progress lines."""
        return " ".join(f"{k}={v}" for k, v in self.params) + f" seed={self.seed}"

    def columns(self) -> dict[str, Value | int]:
        """The first columns of the run's row: the parameters, ``seed_index`` and ``seed``."""
        return {**dict(self.params), "seed_index": self.seed_index, "seed": self.seed}


@dataclass(frozen=True)
class Sweep:
    """A loaded sweep: its runs (point-major, then seed), varied names and output dir."""

    path: Path
    base: Path
    varied: tuple[str, ...]
    runs: tuple[SweepRun, ...]
    out: Path | None
    capacity: CapacitySettings | None = None
    """The ``[capacity]`` table (None: each run is one run)."""


def load_sweep(path: str | Path) -> Sweep:
    """Read, validate and expand a sweep file; errors name the field (``sweep.grid...``)."""
    path = Path(path)
    spec = validate(SweepFile, read_toml(path, "sweep"), "sweep")
    base = (path.parent / spec.base).resolve()
    if not is_file(base):
        raise InputError(f"sweep.base: scenario file not found: {base}")
    raw = load_raw(str(base), [])
    groups = _groups(spec)
    _check_size(groups, spec.seeds)
    varied = tuple(k for g in groups for k in g[0])
    fixed = [_item(k, v) for k, v in spec.set.items()]
    runs = []
    for combination in itertools.product(*[list(zip(*g[1], strict=True)) for g in groups]):
        params = tuple(
            (k, v)
            for (keys, _), values in zip(groups, combination, strict=True)
            for k, v in zip(keys, values, strict=True)
        )
        point_raw = copy.deepcopy(raw)
        for item in [*fixed, *(_item(k, v) for k, v in params)]:
            apply_override(point_raw, item)
        base_seed = build_scenario(copy.deepcopy(point_raw)).run.seed
        for i in range(spec.seeds):
            seeded = copy.deepcopy(point_raw)
            apply_override(seeded, f"run.seed={base_seed + i}")
            runs.append(SweepRun(params, i, base_seed + i, build_scenario(seeded)))
    _check_distinct(spec, groups, runs)
    out = Path(spec.out) if spec.out else None
    return Sweep(path, base, varied, tuple(runs), out, spec.capacity)


def _groups(spec: SweepFile) -> list[tuple[tuple[str, ...], list[list[Value]]]]:
    """The varied parameters as groups varied together: each grid key alone, each zip table
    as one group; checks lengths and that no name is given twice."""
    groups = []
    for key, values in spec.grid.items():
        if not values:
            raise InputError(f"sweep.grid.{key}: needs at least one value")
        groups.append(((key,), [values]))
    for i, table in enumerate(spec.zip):
        lengths = {len(v) for v in table.values()}
        if len(lengths) > 1 or 0 in lengths:
            raise InputError(
                f"sweep.zip.{i}: lists varied together must have one non-zero length, got "
                + ", ".join(f"{k}: {len(v)}" for k, v in table.items())
            )
        if table:
            groups.append((tuple(table), list(table.values())))
    for keys, lists in groups:
        points = list(zip(*lists, strict=True))
        if len(set(map(repr, points))) != len(points):
            where = f"grid.{keys[0]}" if keys[0] in spec.grid else f"zip ({', '.join(keys)})"
            raise InputError(
                f"sweep.{where}: a point is listed twice; list each once (repetitions are seeds)"
            )
    seen: set[str] = set(spec.set)
    for keys, _ in groups:
        for key in keys:
            if key in seen:
                raise InputError(f"sweep: {key} is given twice (set, grid and zip must not share)")
            seen.add(key)
    return groups


def _check_size(groups: list[tuple[tuple[str, ...], list[list[Value]]]], seeds: int) -> None:
    """Refuse a sweep of more than :data:`MAX_RUNS` runs before any run is built."""
    points = math.prod(len(lists[0]) for _, lists in groups)
    if points * seeds > MAX_RUNS:
        raise InputError(
            f"sweep: {points:,} points x {seeds:,} seeds = {points * seeds:,} runs; at most "
            f"{MAX_RUNS:,} runs per sweep file (split it into several)"
        )


def _check_distinct(
    spec: SweepFile, groups: list[tuple[tuple[str, ...], list[list[Value]]]], runs: list[SweepRun]
) -> None:
    """Refuse two runs that are one run once validated (the same scenario, so the same
    ``scenario_hash``): the store would keep one row and the summary count it twice.

    Values that differ as written but not once validated (``2`` and ``2.0`` for an integer
    field) are named by their key; runs of different points that meet through their seeds
    (``run.seed`` varied in steps smaller than ``seeds``) are named by their seeds."""
    first: dict[str, SweepRun] = {}
    for run_ in runs:
        other = first.setdefault(run_.scenario_hash, run_)
        if other is run_:
            continue
        if other.seed_index != run_.seed_index:
            raise InputError(
                f"sweep.seeds: {_point(run_)} seed {run_.seed} is the run of {_point(other)} "
                f"seed {other.seed} (a point's seeds are its run.seed + 0 .. seeds - 1): vary "
                f"run.seed in steps of at least seeds ({spec.seeds})"
            )
        written, kept = dict(run_.params), dict(other.params)
        keys = [k for k in written if repr(written[k]) != repr(kept[k])]
        owners = [g for g, _ in groups if set(g) & set(keys)]
        if len(owners) != 1:
            where = "sweep"
        elif owners[0][0] in spec.grid:
            where = f"sweep.grid.{owners[0][0]}"
        else:
            where = f"sweep.zip ({', '.join(owners[0])})"
        shown = ", ".join(f"{k} = {_toml(written[k])}" for k in keys)
        same = ", ".join(f"{k} = {_toml(kept[k])}" for k in keys)
        raise InputError(
            f"{where}: {shown} is the same as {same} once validated (one run listed twice); "
            "list each value once (repetitions are seeds)"
        )


def _point(run_: SweepRun) -> str:
    return "point " + (" ".join(f"{k}={_toml(v)}" for k, v in run_.params) or "(base)")


def _toml(value: Value) -> str:
    """``value`` as written in a sweep file (``2.0``, ``"bsp-group"``, ``true``)."""
    return json.dumps(value)


def _item(key: str, value: Value) -> str:
    """A ``--set`` item for ``key`` = ``value`` (strings quoted as TOML strings)."""
    return f"{key}={json.dumps(value)}"
