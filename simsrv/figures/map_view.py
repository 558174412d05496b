"""Pictures of a map: walls, doorways, rooms, concentration areas, spawn points, players.

BSP maps are drawn as their walkable floors shaded by height (``BspMap.floor_heights``), with
teleporters and their destinations.

Players are coloured by their BSP group (``Snapshot.group``) in a frame where the circled
players sent a packet; players in no group (no sender reaches them) are light grey.  Top view
(x right, y up); solids that stop below the ceiling (an upper floor) are drawn lighter.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.animation import FuncAnimation, PillowWriter
from matplotlib.collections import PatchCollection
from matplotlib.figure import Figure
from matplotlib.patches import Circle, Rectangle

from simsrv.pipeline.snapshot import Snapshot
from simsrv.world.maps.base import GameMap
from simsrv.world.maps.bsp_map import BspMap

WALL, LEDGE, ROOM_EDGE = "#3b3b3b", "#b9b0a0", "#d0d0d0"


def map_figure(game_map: GameMap, snap: Snapshot, title: str = "") -> Figure:
    """One snapshot of the map and its players, as a new figure."""
    fig, ax = plt.subplots(figsize=(7.0, 7.0), layout="constrained")
    _draw(ax, game_map, snap, title)
    return fig


def save_animation(game_map: GameMap, snaps: list[Snapshot], path: str, title: str = "") -> None:
    """Animate ``snaps`` (one frame each, 5 frames/s) into a GIF at ``path``."""
    fig, ax = plt.subplots(figsize=(6.0, 6.0), layout="constrained")

    def frame(i: int):
        ax.clear()
        _draw(ax, game_map, snaps[i], title)
        return []

    animation = FuncAnimation(fig, frame, frames=len(snaps), blit=False)
    animation.save(path, writer=PillowWriter(fps=5))
    plt.close(fig)


def _draw(ax, game_map: GameMap, snap: Snapshot, title: str) -> None:
    if isinstance(game_map, BspMap):
        _bsp_floors(ax, game_map)
    else:
        _walls(ax, game_map)
    areas = game_map.attractors
    for k, (centre, radius) in enumerate(zip(snap.attractors, areas.radius, strict=True)):
        label = "concentration area" if k == 0 else None  # one legend entry for all of them
        ax.add_patch(
            Circle(centre[:2], radius, color="#f2c14e", alpha=0.3, linewidth=0, label=label)
        )
    if len(game_map.doors):
        ax.scatter(*game_map.doors[:, :2].T, marker="s", s=14, color="#6a9fb5", label="doorway")
    ax.scatter(*game_map.spawn_points[:, :2].T, marker="x", s=30, color="#444", label="spawn point")
    if len(game_map.entities):
        ax.scatter(
            *game_map.entities[:, :2].T, marker="^", s=22, color="#8c564b", label="map entity"
        )
    _players(ax, snap)
    ax.set_aspect("equal")
    ax.set_xlabel("x (units)")
    ax.set_ylabel("y (units)")
    grouped = snap.group[snap.group >= 0]
    sizes = np.bincount(np.unique(grouped, return_inverse=True)[1]) if len(grouped) else [0]
    ax.set_title(
        f"{title}  t = {snap.time_s:.1f} s\n{len(snap.positions)} players, "
        f"{int(snap.active.sum())} sent: {len(grouped) and len(sizes)} groups, "
        f"largest {max(sizes)} players",
        fontsize=10,
    )
    ax.legend(loc="upper right", fontsize=7, framealpha=0.8)


def _bsp_floors(ax, game_map: BspMap) -> None:
    """Walkable floors of a BSP map coloured by height (colour bar); blank: solid or void.

    The view is limited to the floors: a map's world box often reaches far beyond them.
    """
    floors = game_map.floor_heights
    image = ax.imshow(
        floors.image, origin="lower", extent=floors.extent, cmap="viridis", alpha=0.45
    )
    ax.figure.colorbar(image, ax=ax, shrink=0.6, label="floor height (units)")
    ax.set_xlim(*floors.extent[:2])
    ax.set_ylim(*floors.extent[2:])
    if len(game_map.teleport_min):
        ax.scatter(
            *(0.5 * (game_map.teleport_min + game_map.teleport_max))[:, :2].T,
            marker="o",
            s=30,
            facecolors="none",
            edgecolors="#9467bd",
            label="teleporter",
        )
        ax.scatter(
            *game_map.teleport_to[:, :2].T,
            marker="+",
            s=30,
            color="#9467bd",
            label="teleport destination",
        )


def _walls(ax, game_map: GameMap) -> None:
    """Extent, rooms (dotted), full-height walls and lower solids (ledges) of a box map."""
    lo, hi = game_map.extent_min, game_map.extent_max
    ax.add_patch(Rectangle(lo[:2], *(hi - lo)[:2], fill=False, edgecolor=WALL, linewidth=2))
    rooms = [
        Rectangle(a[:2], *(b - a)[:2])
        for a, b in zip(game_map.room_min, game_map.room_max, strict=True)
    ]
    ax.add_collection(
        PatchCollection(rooms, facecolor="none", edgecolor=ROOM_EDGE, linewidth=0.6, linestyle=":")
    )
    full = game_map.solid_max[:, 2] >= hi[2]
    for mask, colour in ((full, WALL), (~full, LEDGE)):
        boxes = [
            Rectangle(a[:2], *(b - a)[:2])
            for a, b in zip(game_map.solid_min[mask], game_map.solid_max[mask], strict=True)
        ]
        ax.add_collection(PatchCollection(boxes, facecolor=colour, edgecolor="none"))
    ax.set_xlim(lo[0] - 32, hi[0] + 32)
    ax.set_ylim(lo[1] - 32, hi[1] + 32)


def _players(ax, snap: Snapshot) -> None:
    grouped = snap.group >= 0
    labels, index, counts = np.unique(snap.group[grouped], return_inverse=True, return_counts=True)
    xy = snap.positions[:, :2]
    ax.scatter(*xy[~grouped].T, s=8, color="#c8c8c8", label="player (in no group)")
    palette = plt.get_cmap("tab20")
    ax.scatter(*xy[grouped].T, s=16, c=palette(index % palette.N), label="player (colour: group)")
    ax.scatter(
        *xy[snap.active].T,
        s=40,
        facecolors="none",
        edgecolors="k",
        linewidths=0.6,
        label="sent a packet",
    )
