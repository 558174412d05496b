"""The reference table: every published figure the model is checked against.

The data live in ``reference.toml`` beside this module (one ``[[row]]`` per figure, a
``[papers.NAME]`` table per source).  Fields of a row:

=============================  ================================================================
``id``                         unique name (``--only`` selects by it)
``paper``                      a key of ``[papers]``
``source``                     section, table or figure of the paper(s)
``description``                what was measured, in words
``kind``                       ``calibration`` (fitted, or set as an input) or ``prediction``
``scenario``                   scenario file under the repository's ``scenarios/`` (not for
                               ``pingpong`` rows)
``pingpong``                   instead of a scenario: an interconnect profile whose ping-pong
                               [V §4.1] the row measures (:mod:`simsrv.validation.pingpong`)
``versus``                     ``pingpong`` rows: the profile compared with (ratio, crossover)
``message_bytes``              ``pingpong`` rows: the message size (or the range's end)
``set``                        ``KEY=VALUE`` overrides of the scenario (as ``--set``)
``quantity``                   a run quantity (:mod:`simsrv.validation.quantities`),
                               ``capacity_clients`` or ``capacity_gain``
``statistic``                  ``mean`` over seeds (default) or ``sd`` between seeds
``value``                      the paper's value, in the quantity's units
``relation``                   ``equal`` (default), ``at_most`` or ``at_least``
``rel_tol`` / ``abs_tol``      exactly one: allowed distance from ``value`` (relative, or in
                               the quantity's units); for a bound, how far past it passes
``baseline``                   ``capacity_gain`` only: the scenario whose capacity is the base
``capacity_start``             capacity searches: first client count (default 8)
``capacity_step``              capacity searches: clients per step (default 8)
``capacity_min_reply_ratio``   capacity searches: replies/offered a met count needs (0.8)
``note``                       anything a reader of the table should know
=============================  ================================================================
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from simsrv.core.errors import InputError
from simsrv.core.strict_model import StrictModel, validate

REFERENCE_FILE = Path(__file__).with_name("reference.toml")
SCENARIO_DIR = Path(__file__).resolve().parents[2] / "scenarios"
"""Where the reference scenarios live (the repository's ``scenarios/``)."""

CAPACITY_QUANTITIES = ("capacity_clients", "capacity_gain")
"""Quantities measured by a capacity search rather than read from one run."""


class Paper(StrictModel):
    """A source of reference figures and the platform its calibration rows fit."""

    title: str
    platform: str


class ReferenceRow(StrictModel):
    """One published figure, how to reproduce it and how close the model must come."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    paper: str
    source: str
    description: str
    kind: Literal["calibration", "prediction"]
    scenario: str = ""
    pingpong: str = ""
    versus: str = ""
    message_bytes: int | None = Field(default=None, ge=0)
    set: tuple[str, ...] = ()
    quantity: str
    statistic: Literal["mean", "sd"] = "mean"
    value: float
    relation: Literal["equal", "at_most", "at_least"] = "equal"
    rel_tol: float | None = Field(default=None, ge=0)
    abs_tol: float | None = Field(default=None, ge=0)
    baseline: str | None = None
    capacity_start: int = Field(default=8, ge=1)
    capacity_step: int = Field(default=8, ge=1)
    capacity_min_reply_ratio: float = Field(default=0.8, gt=0, le=1)
    note: str = ""
    conflict: str = ""
    """Calibration rows only: why the joint fit cannot meet this row together with the others
    (two published statements that cannot both hold in the model; docs/calibration.md).  Such
    a row is reported as a conflict, not counted as a calibration failure."""

    @model_validator(mode="after")
    def _check(self) -> ReferenceRow:
        if bool(self.scenario) == bool(self.pingpong):
            raise ValueError("scenario: give exactly one of scenario and pingpong")
        if self.pingpong and not self.quantity.startswith("pingpong_"):
            raise ValueError("quantity: a pingpong row needs a pingpong_* quantity")
        if self.pingpong and self.message_bytes is None:
            raise ValueError("message_bytes: required by pingpong rows")
        if self.conflict and self.kind != "calibration":
            raise ValueError("conflict: only calibration rows can record a conflict")
        if (self.rel_tol is None) == (self.abs_tol is None):
            raise ValueError("rel_tol: give exactly one of rel_tol and abs_tol")
        if (self.quantity == "capacity_gain") != (self.baseline is not None):
            raise ValueError("baseline: required by capacity_gain and only by it")
        if self.relation == "equal" and self.rel_tol is not None and self.value == 0:
            raise ValueError("rel_tol: a relative tolerance needs a non-zero value")
        return self

    @property
    def tolerance(self) -> float:
        """Allowed distance from :attr:`value` in the quantity's units."""
        return self.abs_tol if self.abs_tol is not None else self.rel_tol * abs(self.value)

    @property
    def tolerance_label(self) -> str:
        """What passes: ``±3 %`` or ``±0.1`` around the value, or ``<= 0.05`` for a bound."""
        if self.relation == "at_most":
            return f"<= {self.value + self.tolerance:.4g}"
        if self.relation == "at_least":
            return f">= {self.value - self.tolerance:.4g}"
        if self.rel_tol is not None:
            return f"±{100 * self.rel_tol:g} %"
        return f"±{self.abs_tol:g}"

    def passes(self, model_value: float) -> bool:
        """Whether ``model_value`` meets the paper's value within the tolerance."""
        if self.relation == "at_most":
            return model_value <= self.value + self.tolerance
        if self.relation == "at_least":
            return model_value >= self.value - self.tolerance
        return abs(model_value - self.value) <= self.tolerance

    def scenario_path(self, name: str | None = None) -> Path:
        """The absolute path of the row's scenario (or of ``name``, e.g. the baseline); the
        scenarios directory itself for a ``pingpong`` row."""
        return SCENARIO_DIR / (name or self.scenario)


class Reference(StrictModel):
    """The whole table: papers and rows, in file order."""

    papers: dict[str, Paper]
    row: tuple[ReferenceRow, ...]

    @model_validator(mode="after")
    def _check(self) -> Reference:
        seen: set[str] = set()
        for row in self.row:
            if row.id in seen:
                raise ValueError(f"row: duplicate id {row.id!r}")
            seen.add(row.id)
            if row.paper not in self.papers:
                raise ValueError(
                    f"row: {row.id}: unknown paper {row.paper!r}; allowed: {', '.join(self.papers)}"
                )
        return self

    def by_id(self, row_id: str) -> ReferenceRow:
        """The row called ``row_id``."""
        for row in self.row:
            if row.id == row_id:
                return row
        raise KeyError(row_id)

    def select(self, names: list[str]) -> list[ReferenceRow]:
        """Rows whose id or paper is one of ``names`` (all rows when ``names`` is empty).

        Raises :class:`InputError` for a name that is neither.
        """
        if not names:
            return list(self.row)
        ids = {row.id for row in self.row}
        for name in names:
            if name not in ids and name not in self.papers:
                raise InputError(
                    f"--only: unknown paper or row {name!r}; allowed papers: "
                    f"{', '.join(self.papers)}, or a row id (simsrv validate --list)"
                )
        return [row for row in self.row if row.id in names or row.paper in names]

    def platform_rows(self, platform: str) -> list[ReferenceRow]:
        """The calibration rows of the papers whose platform is ``platform``."""
        papers = {name for name, p in self.papers.items() if p.platform == platform}
        return [r for r in self.row if r.paper in papers and r.kind == "calibration"]


@cache
def load_reference(path: Path = REFERENCE_FILE) -> Reference:
    """Load and validate the reference table (errors name the field, as for scenarios)."""
    try:
        data = tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        raise InputError(f"reference: file not found: {path}") from None
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"reference: {path} is not valid TOML: {error}") from None
    return validate(Reference, data, "reference")
