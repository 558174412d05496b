"""``file``: a map read from a TOML data file; :func:`map_to_toml` writes one.

Any built map can be exported (``simsrv map SCENARIO --export map.toml``) and loaded back as
``[map] kind = "file"``, ``path = "map.toml"``: the file holds every array of
:class:`~simsrv.world.maps.base.GameMap` as nested lists (Quake units), so a hand-edited or
converted layout runs like a built-in kind.  Relative paths are relative to the working
directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import numpy as np
from pydantic import Field

from simsrv.core.errors import InputError
from simsrv.core.strict_model import StrictModel
from simsrv.core.toml_file import MAX_DATA_TOML_BYTES, read_toml
from simsrv.world.maps.attractors import Attractors
from simsrv.world.maps.base import PLAYER_HALF_WIDTH, GameMap
from simsrv.world.maps.registry import MAP_KINDS, MapKind

ARRAYS = {
    # field: (shape of one row, dtype); an empty list is an empty array of that row shape
    "extent_min": ((), float),
    "extent_max": ((), float),
    "solid_min": ((3,), float),
    "solid_max": ((3,), float),
    "room_min": ((3,), float),
    "room_max": ((3,), float),
    "room_visible": ((-1,), bool),
    "spawn_points": ((3,), float),
    "entities": ((3,), float),
    "doors": ((3,), float),
    "door_rooms": ((2,), np.int64),
}
ATTRACTOR_ARRAYS = {"centres": (3,), "radius": (), "weight": (), "velocity": (2,)}


class FileParams(StrictModel):
    """A map data file."""

    path: str = Field(..., description="TOML map file (written by simsrv map --export)")


def map_to_toml(game_map: GameMap) -> str:
    """The map as a TOML document (exact: floats are written with ``repr``)."""
    lines = [f'source_kind = "{game_map.kind}"']
    for name in ARRAYS:
        lines.append(f"{name} = {_value(getattr(game_map, name))}")
    lines.append("\n[attractors]")
    for name in ATTRACTOR_ARRAYS:
        lines.append(f"{name} = {_value(getattr(game_map.attractors, name))}")
    return "\n".join(lines) + "\n"


def _value(array: np.ndarray) -> str:
    if array.ndim == 0:
        v = array.item()
        return ("true" if v else "false") if isinstance(v, bool) else repr(v)
    return "[" + ", ".join(_value(x) for x in array) + "]"


def load_map(path: str | Path) -> GameMap:
    """Read a map file; a missing file or a malformed array is an :class:`InputError`."""
    data = read_toml(path, "map.path", MAX_DATA_TOML_BYTES)
    arrays = {name: _array(data, name, *spec, "map file") for name, spec in ARRAYS.items()}
    areas = data.get("attractors", {})
    attractors = Attractors(
        **{
            n: _array(areas, n, shape, float, "map file attractors")
            for n, shape in ATTRACTOR_ARRAYS.items()
        }
    )
    _check_consistent(arrays, attractors)
    return GameMap(kind="file", attractors=attractors, **arrays)


def _check_consistent(arrays: dict[str, np.ndarray], attractors: Attractors) -> None:
    """The arrays must describe one map: finite numbers, a 3-D extent with max > min, boxes
    with max >= min, one visibility row and column per room, doors joining existing rooms, and
    one row per attractor in every attractor array."""

    def fail(message: str) -> NoReturn:
        raise InputError(f"map file: {message}")

    areas = {name: getattr(attractors, name) for name in ATTRACTOR_ARRAYS}
    for name, array in [*arrays.items(), *areas.items()]:
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            fail(f"array {name!r} holds NaN or infinity")
    low, high = arrays["extent_min"], arrays["extent_max"]
    if low.shape != (3,) or high.shape != (3,):
        fail("extent_min and extent_max must be [x, y, z] each")
    if not (high > low).all() or not (high[:2] - low[:2] > 2 * PLAYER_HALF_WIDTH).all():
        fail(
            f"extent_max {high.tolist()} must exceed extent_min {low.tolist()} on every axis, "
            f"by more than a player's width ({2 * PLAYER_HALF_WIDTH:g} units) on x and y"
        )
    for box in ("solid", "room"):
        lo, hi = arrays[f"{box}_min"], arrays[f"{box}_max"]
        if len(lo) != len(hi) or not (hi >= lo).all():
            fail(f"{box}_min and {box}_max must pair up, with max >= min")
    rooms = len(arrays["room_min"])
    if arrays["room_visible"].shape != (rooms, rooms):
        fail(f"room_visible must be {rooms} x {rooms} (one row and column per room)")
    doors = arrays["door_rooms"]
    if len(doors) != len(arrays["doors"]) or (doors.size and not (doors >= 0).all()):
        fail("door_rooms must hold one [room, room] pair per door")
    if doors.size and doors.max() >= rooms:
        fail(f"door_rooms names room {int(doors.max())}; the map has {rooms} rooms")
    if len({len(a) for a in areas.values()}) > 1:
        fail("attractor arrays must have one row per attractor")
    if not ((attractors.radius > 0).all() and (attractors.weight > 0).all()):
        fail("every attractor needs a radius > 0 and a weight > 0")


def _array(data: dict, name: str, row: tuple, dtype, where: str) -> np.ndarray:
    if name not in data:
        raise InputError(f"{where}: missing array {name!r}")
    try:
        out = np.array(data[name], dtype=dtype)
        if out.size == 0 and row and row[0] > 0:
            out = out.reshape(0, *row)
        elif row and row[0] > 0 and out.shape[1:] != row:
            raise ValueError(f"rows of {row[0]} values expected")
    except (ValueError, TypeError) as error:
        raise InputError(f"{where}: array {name!r} is malformed ({error})") from None
    return out


def build_file(params: FileParams, rng: np.random.Generator) -> GameMap:
    """Load the map file (``rng`` unused: a file is deterministic)."""
    return load_map(params.path)


MAP_KINDS.register("file", MapKind("file", FileParams, build_file))
