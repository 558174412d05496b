"""``hotspots``: any base layout plus concentration areas, including SynQuake's quest layouts.

``base`` names another map kind and ``base_params`` its parameters; this kind adds attractors
(concentration areas) on top.  ``layout`` places them:

``random``      ``count`` areas at seeded uniform points (at least ``radius`` from the edges)
``1center``     one area at the centre                                   (SynQuake ``1center``)
``4quadrants``  one at the centre of each quadrant                       (``4quadrants``)
``4worst``      four straddling the quadrant borders, at the midpoints   (``4worst``:
                of the four half-axes, so quadrant partitioning splits     adversarial to
                every area between two servers)                            quadrant splits)
``4moving``     the ``4quadrants`` areas moving at ``speed`` units/s     (``4moving``)
                diagonally, bouncing off the map's edges
``explicit``    the ``areas`` table: ``[[x, y, radius, weight], ...]``

Weights (``weights``, one per area, default equal) set the share of players that pick each
area when a mobility model chooses by weight.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from simsrv.core.errors import InputError
from simsrv.core.strict_model import StrictModel, validate
from simsrv.world.maps.attractors import Attractors
from simsrv.world.maps.base import GameMap
from simsrv.world.maps.registry import MAP_KINDS, MapKind

LAYOUTS = ("random", "1center", "4quadrants", "4worst", "4moving", "explicit")


class HotspotsParams(StrictModel):
    """A base map kind plus concentration areas (units are Quake units)."""

    base: str = Field("arena", description="map kind underneath (any registered kind)")
    base_params: dict[str, Any] = Field(default_factory=dict, description="its parameters")
    layout: Literal["random", "1center", "4quadrants", "4worst", "4moving", "explicit"] = Field(
        "4quadrants", description="where the areas are (see the kind's docs)"
    )
    count: int = Field(4, ge=1, le=10_000, description="areas of the random layout")
    radius: float = Field(256.0, gt=0.0, description="radius of each area")
    weights: list[float] = Field(default_factory=list, description="one per area; default equal")
    speed: float = Field(64.0, ge=0.0, le=10_000.0, description="4moving: speed, units/s")
    areas: list[list[float]] = Field(
        default_factory=list, description="explicit: [x, y, radius, weight] per area"
    )

    @model_validator(mode="after")
    def _check(self) -> HotspotsParams:
        if self.base == "hotspots":
            raise ValueError("base: must be a layout kind, not hotspots itself")
        try:
            kind = MAP_KINDS.get(self.base, "base")
            validate(kind.params, self.base_params, "base_params")
        except InputError as error:
            raise ValueError(str(error)) from None
        if self.layout == "explicit" and not self.areas:
            raise ValueError("areas: the explicit layout needs at least one [x, y, radius, weight]")
        if any(len(a) != 4 or a[2] <= 0 or a[3] <= 0 for a in self.areas):
            raise ValueError("areas: each area is [x, y, radius > 0, weight > 0]")
        if any(w <= 0 for w in self.weights):
            raise ValueError("weights: every weight must be > 0")
        areas = {"random": self.count, "1center": 1, "explicit": len(self.areas)}.get(
            self.layout, 4
        )
        if self.weights and len(self.weights) != areas:
            raise ValueError(f"weights: one per area ({areas} areas), got {len(self.weights)}")
        return self


def build_hotspots(params: HotspotsParams, rng: np.random.Generator) -> GameMap:
    """Build the base map, then place the areas of ``layout`` on it."""
    kind = MAP_KINDS.get(params.base, "map.base")
    base = kind.build(validate(kind.params, params.base_params, "map.base_params"), rng)
    areas = _areas(params, base, rng)
    return dataclasses.replace(base, kind="hotspots", attractors=areas)


def _areas(params: HotspotsParams, base: GameMap, rng: np.random.Generator) -> Attractors:
    lo, hi = base.extent_min[:2], base.extent_max[:2]
    size = hi - lo
    r = params.radius
    if params.layout == "random" and 2 * r >= size.min():
        raise InputError(
            f"map.radius: the random layout needs 2 x radius < the map's shorter side "
            f"({size.min():g}), got {r:g}"
        )
    velocity = None
    if params.layout == "explicit":
        table = np.array(params.areas, dtype=float)
        xy, radius, weight = table[:, :2], table[:, 2], table[:, 3]
    else:
        if params.layout == "random":
            xy = rng.uniform(lo + r, hi - r, size=(params.count, 2))
        elif params.layout == "1center":
            xy = (lo + size / 2)[None]
        elif params.layout in ("4quadrants", "4moving"):
            xy = lo + size * np.array([[0.25, 0.25], [0.75, 0.25], [0.25, 0.75], [0.75, 0.75]])
        else:  # 4worst: on the quadrant borders
            xy = lo + size * np.array([[0.5, 0.25], [0.5, 0.75], [0.25, 0.5], [0.75, 0.5]])
        radius = np.full(len(xy), r)
        weight = np.ones(len(xy))
        if params.layout == "4moving":
            diagonal = params.speed / np.sqrt(2.0)
            velocity = diagonal * np.array([[1, 1], [-1, 1], [1, -1], [-1, -1]], dtype=float)
    if params.weights:
        weight = np.array(params.weights, dtype=float)
    _check_on_map("map.areas" if params.layout == "explicit" else "map.radius", xy, radius, lo, hi)
    return Attractors(
        centres=base.standing_at(xy),
        radius=radius,
        weight=weight,
        velocity=np.zeros((len(xy), 2)) if velocity is None else velocity,
    )


def _check_on_map(
    field: str, xy: np.ndarray, radius: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> None:
    """Every area must lie on the base map: its centre inside the map's horizontal extent and
    its radius at most the map's longer side (players are drawn inside the areas and kept
    only where they stand on the floor); ``field`` names the areas' scenario field."""
    longest = float((hi - lo).max())
    for k, ((x, y), r) in enumerate(zip(xy.tolist(), radius.tolist(), strict=True)):
        if not (lo[0] <= x <= hi[0] and lo[1] <= y <= hi[1]):
            raise InputError(
                f"{field}: area {k}'s centre ({x:g}, {y:g}) is outside the map "
                f"(x {lo[0]:g} to {hi[0]:g}, y {lo[1]:g} to {hi[1]:g})"
            )
        if r > longest:
            raise InputError(
                f"{field}: area {k}'s radius must be at most the map's longer side "
                f"({longest:g}), got {r:g}"
            )


MAP_KINDS.register("hotspots", MapKind("hotspots", HotspotsParams, build_hotspots))
