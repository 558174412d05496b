"""``bsp``: a real Quake map read from a BSP version 29 file (``map.file``, plain or ``.gz``).

What the file gives the simulation, and the rules we apply (QuakeWorld's where it has one):

* **Extent**: the world model's bounding box; the areanode tree is built from it, as
  QuakeWorld's ``SV_ClearWorld`` does with ``sv.worldmodel->mins/maxs``.
* **Collision**: a player is at a free origin when the point is not solid in hull 1 (the clip
  tree for the player box, ``SV_HullPointContents``).  A move whose end is solid is rejected
  unless the player fits one step (``STEP_HEIGHT`` = 18 units) higher, where it climbs the
  step (stairs); walking off a ledge falls under gravity.  Water, slime and lava are walkable.
* **Ground**: the highest non-solid height at or below the player's origin + one step, found by
  probing hull 1 downwards (16-unit probes, then bisection to 1/4 unit); a player within half
  a unit above its ground stands on it.
* **Spawn**: players start at the ``info_player_deathmatch`` points (or ``info_player_start``
  when a map has none), spread uniformly within ``spawn_spread`` units of the point so that
  hundreds of players do not stack on six points; killed players respawn on the points.
* **Map entities**: items (``weapon_*``, ``item_*``), doors, buttons, lifts, trains and
  teleport triggers, at their origin or brush-model centre; they join action-range lists and
  world physics like any map entity.
* **Attractors**: every item whose class matches a prefix of ``item_weights`` (longest prefix
  wins; weight 0: not an attractor) is a concentration area of radius ``attractor_radius``.
* **Teleporters**: a player whose box touches a ``trigger_teleport`` brush is moved to the
  ``info_teleport_destination`` its ``target`` names, 27 units above it (``T_Teleport``).
* **Lifts** (``func_plat``): the plat brush is not in the world's hull, so its shaft is an open
  pit.  A player over a plat's footprint stands on the plat's top (where the map places it)
  and one inside the shaft is carried up to it at once (a lift with no travel time).  Doors
  are not in the world's hull either: they are always open.
* **Visibility**: rooms are the BSP leaves and ``room_visible`` is the decompressed PVS; a
  client's reply holds the entities whose leaf is potentially visible from its leaf, and its
  PVS work counts the leaves in its PVS row (``pvs_row_rooms``).
* **Free floor** (random destinations, spawn-free placement): ``nav_samples`` standing origins
  drawn (seeded) inside empty leaves and dropped to the ground, plus the spawn points and
  items; a point (x, y) stands at the height of the nearest such origin.

Waypoint walkers route without doorways on BSP maps (no door graph): a walker that slides
along a wall too long picks another destination.  The ``quake-bot`` model is the papers'.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from pydantic import Field

from simsrv.core.errors import InputError
from simsrv.core.paths import is_file
from simsrv.core.strict_model import StrictModel
from simsrv.world.bsp.entities import model_index, origin_of
from simsrv.world.bsp.hull import HullTree
from simsrv.world.bsp.reader import BspFile, read_bsp
from simsrv.world.bsp.vis import pvs_matrix
from simsrv.world.maps.attractors import Attractors
from simsrv.world.maps.base import PLAYER_MAXS, PLAYER_MINS, STEP_HEIGHT, GameMap
from simsrv.world.maps.registry import MAP_KINDS, MapKind

if TYPE_CHECKING:
    from scipy.spatial import cKDTree

PROBE_STEP = 16.0
"""Spacing of the downward ground probes, units (hull 1 solids are >= 56 units thick)."""
PROBE_DEPTH = 256.0
"""How far below a player the ground is looked for in one call, units (a longer fall takes
several ticks)."""
BISECTIONS = 6
"""Bisections refining the ground height between two probes (16 / 2**6 = 1/4 unit)."""
STANDING_TOLERANCE = 0.5
"""A player this close above its ground stands on it, units."""
FLOOR_CELL, FLOOR_Z_STEP = 16.0, 24.0
"""Resolution of :attr:`BspMap.floor_heights` (the picture), units."""
TELEPORT_RISE = 27.0
"""Height above ``info_teleport_destination`` where a teleported player appears (T_Teleport)."""
ENTITY_PREFIXES = ("weapon_", "item_", "func_door", "func_plat", "func_button", "func_train")
"""Classes that become map entities (with ``trigger_teleport``)."""

DEFAULT_ITEM_WEIGHTS = {
    "weapon_": 3.0,
    "item_artifact": 3.0,
    "item_armor": 2.0,
    "item_health": 1.0,
    "item_": 0.5,
}


class BspParams(StrictModel):
    """A Quake BSP 29 map file and how its items draw players."""

    file: str = Field(..., description="BSP 29 file (.bsp or .bsp.gz), relative to the cwd")
    item_weights: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_ITEM_WEIGHTS),
        description="attractor weight per item class prefix (longest prefix wins; 0: none)",
    )
    attractor_radius: float = Field(128.0, gt=0.0, le=4096.0, description="item attractor radius")
    spawn_spread: float = Field(
        96.0, ge=0.0, le=4096.0, description="players start within this distance of a spawn point"
    )
    nav_samples: int = Field(
        4096, ge=16, le=1_000_000, description="free floor origins sampled for destinations"
    )


class FloorHeights(NamedTuple):
    """A top-view raster: ``image`` (ny, nx) heights (units, NaN: no floor) covering
    ``extent`` = (x0, x1, y0, y1) units (matplotlib's ``imshow`` order)."""

    image: np.ndarray
    extent: tuple[float, float, float, float]


@dataclass(frozen=True)
class BspMap(GameMap):
    """A :class:`GameMap` whose geometry is a BSP file's hulls (see the module docstring).

    Extra attributes: ``hull0`` (leaf lookup), ``hull1`` (player clipping), ``teleport_min`` /
    ``teleport_max`` (T, 3) trigger boxes and ``teleport_to`` (T, 3) destinations,
    ``lift_min`` / ``lift_max`` (P, 3) plat boxes at the top position, ``nav_points`` (K, 3)
    free standing origins, ``spawn_spread`` (units) and ``source`` the file read.
    """

    hull0: HullTree | None = None
    hull1: HullTree | None = None
    teleport_min: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    teleport_max: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    teleport_to: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    lift_min: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    lift_max: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    nav_points: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    spawn_spread: float = 96.0
    source: str = ""

    # -- geometry -------------------------------------------------------------------------
    def in_solid(self, origins: np.ndarray) -> np.ndarray:
        """Whether each origin is in solid in hull 1 (the player box overlaps the world)."""
        return self.hull1.solid(origins)

    def blocked(self, origins: np.ndarray) -> np.ndarray:
        """Whether a player cannot be at each origin, even one step higher (stairs). (N,)."""
        solid = self.in_solid(origins)
        if solid.any():
            up = origins[solid] + np.array([0.0, 0.0, STEP_HEIGHT])
            solid[solid] = self.in_solid(up)
        return solid

    def ground_z(self, origins: np.ndarray) -> np.ndarray:
        """Origin height of a player standing below each origin (+ one step), (N,) units.

        Starts one step above the origin (the origin itself under a low ceiling), probes hull 1
        downwards every ``PROBE_STEP`` units to ``PROBE_DEPTH`` and bisects the first
        empty-to-solid interval.  No solid within the depth: the deepest probe (the player
        keeps falling).  An origin in solid returns its own height.  Lift tops count as ground.
        """
        z = origins[:, 2].astype(float)
        start = origins.astype(float).copy()
        start[:, 2] += STEP_HEIGHT
        low_ceiling = self.in_solid(start)
        start[low_ceiling, 2] = z[low_ceiling]
        probes = np.arange(1, int(PROBE_DEPTH / PROBE_STEP) + 1) * PROBE_STEP
        n, k = len(origins), len(probes)
        points = np.repeat(start, k, axis=0)
        points[:, 2] -= np.tile(probes, n)
        solid = self.in_solid(points).reshape(n, k)
        hit = solid.any(axis=1)
        first = np.argmax(solid, axis=1)
        empty_z = start[:, 2] - np.where(first > 0, probes[first - 1], 0.0)
        solid_z = start[:, 2] - probes[first]
        for _ in range(BISECTIONS):
            mid = 0.5 * (empty_z + solid_z)
            inside = self.in_solid(np.column_stack([start[:, :2], mid]))
            solid_z = np.where(inside, mid, solid_z)
            empty_z = np.where(inside, empty_z, mid)
        ground = np.where(hit, empty_z, start[:, 2] - PROBE_DEPTH)
        trapped = low_ceiling.copy()  # start is the origin there: is the origin itself solid?
        trapped[low_ceiling] = self.in_solid(origins[low_ceiling])
        ground = np.where(trapped, z, ground)
        ground = np.maximum(ground, self._lift_ground(origins))
        standing = (z >= ground) & (z - ground < STANDING_TOLERANCE)
        return np.where(standing, z, ground)

    def _lift_ground(self, origins: np.ndarray) -> np.ndarray:
        """Standing height on the top of a plat whose footprint holds each origin, or -inf."""
        out = np.full(len(origins), -np.inf)
        for lo, hi in zip(self.lift_min, self.lift_max, strict=True):
            over = np.all((origins[:, :2] >= lo[:2]) & (origins[:, :2] <= hi[:2]), axis=1)
            top = hi[2] - PLAYER_MINS[2]
            below_top = origins[:, 2] <= top + STEP_HEIGHT
            out[over & below_top] = np.maximum(out[over & below_top], top)
        return out

    def standing_at(self, xy: np.ndarray) -> np.ndarray:
        """Origins standing at each (x, y), on the floor of the nearest free-floor sample."""
        _, nearest = self.nav_tree.query(xy)
        start = np.column_stack([xy, self.nav_points[nearest, 2]])
        return np.column_stack([xy, self.ground_z(start)])

    def teleport(self, positions: np.ndarray) -> np.ndarray:
        """Move players touching a teleport trigger to its destination (in place); who moved."""
        if len(self.teleport_min) == 0:
            return np.zeros(0, dtype=np.int64)
        lo = positions + PLAYER_MINS
        hi = positions + PLAYER_MAXS
        touch = np.all(
            (lo[:, None, :] <= self.teleport_max[None])
            & (hi[:, None, :] >= self.teleport_min[None]),
            axis=2,
        )
        who = np.flatnonzero(touch.any(axis=1))
        positions[who] = self.teleport_to[np.argmax(touch[who], axis=1)]
        return who

    def room_of(self, points: np.ndarray) -> np.ndarray:
        """BSP leaf of each point (hull 0), -1 outside the world (leaf 0). (N,) int."""
        leaf = self.hull0.leaf_of(points)
        return np.where(leaf > 0, leaf, -1)

    def floor_xy(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """``count`` random free-floor samples (x, y), jittered by up to 16 units."""
        pick = rng.integers(0, len(self.nav_points), count)
        return self.nav_points[pick, :2] + rng.uniform(-16.0, 16.0, size=(count, 2))

    def spawn_xy(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """``count`` points (x, y) uniform within ``spawn_spread`` of random spawn points."""
        pick = rng.integers(0, len(self.spawn_points), count)
        angle = rng.uniform(0.0, 2 * np.pi, count)
        radius = self.spawn_spread * np.sqrt(rng.random(count))
        offset = np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
        return self.spawn_points[pick, :2] + offset

    @cached_property
    def floor_heights(self) -> FloorHeights:
        """Top view of the walkable floors over the free-floor samples' box (+ 64 units).

        Each ``FLOOR_CELL`` x ``FLOOR_CELL`` column holds its highest standing height, NaN where
        it has no floor (solid, or outside the map); floors are found by testing hull 1 every
        ``FLOOR_Z_STEP`` units (below 56, the thinnest hull-1 floor).  Computed once per map
        (~2 s on dm4): every frame of an animation draws the same floors.
        """
        cell, z_step = FLOOR_CELL, FLOOR_Z_STEP
        lo = np.maximum(self.nav_points.min(axis=0) - 64.0, self.extent_min)
        hi = np.minimum(self.nav_points.max(axis=0) + 64.0, self.extent_max)
        xs = np.arange(lo[0] + cell / 2, hi[0], cell)
        ys = np.arange(lo[1] + cell / 2, hi[1], cell)
        zs = np.arange(self.extent_min[2], self.extent_max[2] + z_step, z_step)
        grid = np.stack(np.meshgrid(xs, ys, zs, indexing="ij"), axis=-1).reshape(-1, 3)
        solid = self.in_solid(grid).reshape(len(xs), len(ys), len(zs))
        floor = ~solid[:, :, 1:] & solid[:, :, :-1]
        height = np.where(floor, zs[None, None, 1:], -np.inf).max(axis=2)
        image = np.where(np.isfinite(height), height, np.nan).T
        return FloorHeights(image, (lo[0], lo[0] + len(xs) * cell, lo[1], lo[1] + len(ys) * cell))

    @cached_property
    def nav_tree(self) -> cKDTree:
        """k-d tree of the free-floor samples in (x, y)."""
        from scipy.spatial import cKDTree  # here: importing the map kinds skips scipy

        return cKDTree(self.nav_points[:, :2])


def build_bsp(params: BspParams, rng: np.random.Generator) -> BspMap:
    """Read ``params.file`` and build the map; free-floor samples come from ``rng``."""
    path = Path(params.file)
    if not is_file(path):
        raise InputError(f"map.file: no such BSP file: {params.file}")
    bsp = read_bsp(path)
    hull0, hull1 = HullTree.hull0(bsp), HullTree.hull1(bsp)
    spawns = _spawn_points(bsp)
    blocked_spawns = hull1.solid(spawns)
    if blocked_spawns.all():
        raise InputError(f"map.file: {params.file}: every spawn point is in solid")
    spawns = spawns[~blocked_spawns]
    entities, classes = _map_entities(bsp)
    teleport_min, teleport_max, teleport_to = _teleporters(bsp)
    lift_min, lift_max = _brush_boxes(bsp, "func_plat")
    leaves = bsp.leaves
    game_map = BspMap(
        kind="bsp",
        extent_min=bsp.world_mins,
        extent_max=bsp.world_maxs,
        solid_min=np.zeros((0, 3)),
        solid_max=np.zeros((0, 3)),
        room_min=leaves["mins"].astype(float),
        room_max=leaves["maxs"].astype(float),
        room_visible=pvs_matrix(bsp),
        spawn_points=spawns,
        entities=entities,
        hull0=hull0,
        hull1=hull1,
        teleport_min=teleport_min,
        teleport_max=teleport_max,
        teleport_to=teleport_to,
        lift_min=lift_min,
        lift_max=lift_max,
        nav_points=spawns,
        source=str(path),
        spawn_spread=params.spawn_spread,
    )
    floor = _free_floor_samples(game_map, bsp, params.nav_samples, rng)  # hulls only
    items, attractors = _items(game_map, entities, classes, params)
    return replace(game_map, attractors=attractors, nav_points=np.vstack([spawns, floor, items]))


def _spawn_points(bsp: BspFile) -> np.ndarray:
    """Deathmatch spawn origins (the single-player start when a map has none), (S, 3)."""
    for classname in ("info_player_deathmatch", "info_player_start"):
        found = bsp.entities_of(classname)
        if found:
            return np.array([origin_of(e, bsp.path) for e in found])
    raise InputError(f"map.file: {bsp.path}: no info_player_deathmatch or info_player_start")


def _brush_box(bsp: BspFile, entity: dict[str, str]) -> tuple[np.ndarray, np.ndarray] | None:
    """World-space box of an entity's brush model (model box + entity origin), or None."""
    index = model_index(entity)
    if index is None or index >= len(bsp.models):
        return None
    model = bsp.models[index]
    offset = origin_of(entity, bsp.path)
    return model["mins"].astype(float) + offset, model["maxs"].astype(float) + offset


def _brush_boxes(bsp: BspFile, classname: str) -> tuple[np.ndarray, np.ndarray]:
    """Boxes of every ``classname`` brush entity, (B, 3) each."""
    boxes = [b for e in bsp.entities_of(classname) if (b := _brush_box(bsp, e)) is not None]
    if not boxes:
        return np.zeros((0, 3)), np.zeros((0, 3))
    return np.array([b[0] for b in boxes]), np.array([b[1] for b in boxes])


def _map_entities(bsp: BspFile) -> tuple[np.ndarray, list[str]]:
    """Positions (E, 3) and classes of the entities that join action ranges and physics."""
    points, classes = [], []
    for entity in bsp.entities:
        name = entity.get("classname", "")
        if not (name.startswith(ENTITY_PREFIXES) or name == "trigger_teleport"):
            continue
        box = _brush_box(bsp, entity)
        points.append(origin_of(entity, bsp.path) if box is None else 0.5 * (box[0] + box[1]))
        classes.append(name)
    return np.array(points).reshape(-1, 3), classes


def _teleporters(bsp: BspFile) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Trigger boxes and destination origins of the teleporters whose target exists."""
    destinations = {
        e["targetname"]: origin_of(e, bsp.path) + np.array([0.0, 0.0, TELEPORT_RISE])
        for e in bsp.entities_of("info_teleport_destination")
        if "targetname" in e
    }
    lo, hi, to = [], [], []
    for entity in bsp.entities_of("trigger_teleport"):
        box = _brush_box(bsp, entity)
        target = destinations.get(entity.get("target", ""))
        if box is None or target is None:
            continue
        lo.append(box[0])
        hi.append(box[1])
        to.append(target)
    shape = (-1, 3)
    return np.array(lo).reshape(shape), np.array(hi).reshape(shape), np.array(to).reshape(shape)


def _free_floor_samples(
    game_map: BspMap, bsp: BspFile, count: int, rng: np.random.Generator
) -> np.ndarray:
    """Up to ``count`` free standing origins: uniform points of empty leaves dropped to ground.

    Leaves are drawn by volume; a point stands when it is not in solid, its ground is within
    the probe depth, and the standing origin is itself free.
    """
    leaves = bsp.leaves[1 : int(bsp.models[0]["visleafs"]) + 1]
    empty = leaves[leaves["contents"] == -1]
    if len(empty) == 0:
        return np.zeros((0, 3))
    lo, hi = empty["mins"].astype(float), empty["maxs"].astype(float)
    volume = np.prod(np.maximum(hi - lo, 1.0), axis=1)
    pick = rng.choice(len(empty), size=count, p=volume / volume.sum())
    points = rng.uniform(lo[pick], hi[pick])
    points = points[~game_map.in_solid(points)]
    ground = game_map.ground_z(points)
    standing = np.column_stack([points[:, :2], ground])
    landed = (ground > points[:, 2] - PROBE_DEPTH) & ~game_map.in_solid(standing)
    return standing[landed]


def _items(
    game_map: BspMap, entities: np.ndarray, classes: list[str], params: BspParams
) -> tuple[np.ndarray, Attractors]:
    """Standing origins at the items (weapons, ammo, armour...) and their attractors.

    One attractor per item whose class has a positive weight (longest matching prefix of
    ``params.item_weights``); an item whose standing origin is in solid is left out.
    """
    is_item = np.array([c.startswith(("weapon_", "item_")) for c in classes], dtype=bool)
    points = entities[is_item].reshape(-1, 3) + np.array([0.0, 0.0, -PLAYER_MINS[2]])
    standing = np.column_stack([points[:, :2], game_map.ground_z(points)])
    free = ~game_map.in_solid(standing)
    names = [c for c, item in zip(classes, is_item, strict=True) if item]
    weights = np.array([_weight(c, params.item_weights) for c in names]).reshape(-1)
    keep = free & (weights > 0)
    centres = standing[keep]
    attractors = Attractors(
        centres=centres,
        radius=np.full(len(centres), params.attractor_radius),
        weight=weights[keep],
        velocity=np.zeros((len(centres), 2)),
    )
    return standing[free], attractors


def _weight(classname: str, weights: dict[str, float]) -> float:
    matches = [p for p in weights if classname.startswith(p)]
    return weights[max(matches, key=len)] if matches else 0.0


MAP_KINDS.register("bsp", MapKind("bsp", BspParams, build_bsp))
