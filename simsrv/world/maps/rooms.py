"""``rooms``: an R x C grid of rooms joined by doorways, optionally through corridors.

Small rooms make the PVS proxy cheap to answer but small (few visible entities per reply);
walls cut action ranges only through the players' positions (``L_a`` ignores walls [P §4.2]).
Layout details in :mod:`simsrv.world.maps.grid`.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from pydantic import Field, model_validator

from simsrv.core.strict_model import StrictModel
from simsrv.world.maps.base import PLAYER_MINS, GameMap
from simsrv.world.maps.entities import place_entities
from simsrv.world.maps.grid import grid_layout
from simsrv.world.maps.registry import MAP_KINDS, MapKind


class RoomsParams(StrictModel):
    """Parameters of the room grid (units are Quake units)."""

    rows: int = Field(3, ge=1, le=256, description="rooms along y")
    cols: int = Field(3, ge=1, le=256, description="rooms along x")
    room_size: float = Field(512.0, ge=64.0, le=65536.0, description="side of each square room")
    height: float = Field(256.0, ge=64.0, le=8192.0, description="floor-to-ceiling height")
    door_width: float = Field(96.0, ge=40.0, description="width of each doorway (> player 32)")
    wall_thickness: float = Field(32.0, ge=8.0, le=512.0, description="walls between rooms")
    corridor_length: float = Field(
        0.0, ge=0.0, le=65536.0, description="0: doorways in the walls; > 0: corridors this long"
    )
    visibility_hops: int = Field(1, ge=0, le=1000, description="rooms seen through N doorways")
    map_entities: int = Field(0, ge=0, le=100_000, description="map entities (items, lifts)")

    @model_validator(mode="after")
    def _doors_fit(self) -> RoomsParams:
        if self.door_width >= self.room_size:
            raise ValueError(
                f"door_width: must be smaller than room_size ({self.room_size:g}), "
                f"got {self.door_width:g}"
            )
        return self


def build_rooms(params: RoomsParams, rng: np.random.Generator) -> GameMap:
    """Build the grid; spawn points at room centres; entities seeded uniform on free floor."""
    corridors = params.corridor_length > 0
    layout = grid_layout(
        params.rows,
        params.cols,
        params.room_size,
        params.height,
        params.door_width,
        params.corridor_length if corridors else params.wall_thickness,
        corridors=corridors,
        visibility_hops=params.visibility_hops,
    )
    spawns = layout.room_centres.copy()
    spawns[:, 2] = -PLAYER_MINS[2]
    game_map = GameMap(
        kind="rooms",
        extent_min=np.zeros(3),
        extent_max=layout.extent,
        solid_min=layout.solid_min,
        solid_max=layout.solid_max,
        room_min=layout.room_min,
        room_max=layout.room_max,
        room_visible=layout.room_visible,
        spawn_points=spawns,
        doors=layout.doors,
        door_rooms=layout.door_rooms,
    )
    return dataclasses.replace(
        game_map, entities=place_entities(game_map, params.map_entities, rng)
    )


def visibility_bytes(params: RoomsParams) -> tuple[int, str, str]:
    """The room-to-room tables' size (:func:`~simsrv.world.maps.grid.grid_layout`: the hop
    counts, float64, and the visibility, bool, of every pair of rooms), bytes; with corridors
    each corridor is a room."""
    rows, cols = params.rows, params.cols
    corridors = rows * (cols - 1) + cols * (rows - 1) if params.corridor_length > 0 else 0
    rooms = rows * cols + corridors  # each corridor is a room of its own
    return rooms**2 * 9, "rows", f"visibility between {rooms:,} rooms, every pair"


MAP_KINDS.register("rooms", MapKind("rooms", RoomsParams, build_rooms, visibility_bytes))
