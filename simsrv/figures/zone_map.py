"""A map of a cluster's zones: which node owns each place, the border bands (places closer
than the border width to another zone: their entities are mirrored) and the players at a tick.

:func:`zone_map_frame` samples any registered zoning on a raster (so a zoning whose zones are
not rectangles draws the same way); :func:`zone_map_figure` draws the frames.
"""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simsrv.scenario.schema import Scenario

RASTER = 400
"""Raster cells along the map's longer side."""


def zone_map_frame(
    scenario: Scenario, tick: int = 0, raster: int = RASTER
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The zones, players and concentration areas of ``scenario`` (with ``[cluster]``) at
    client tick ``tick``.

    Returns three tidy frames: ``zones`` (one row per raster cell: ``x``, ``y`` its centre in
    units, ``node`` its owner, ``border`` True when the cell is closer than the border width
    to another zone); ``players`` (``x``, ``y``, ``node``, ``mirrored``: closer than the
    border width to another zone); ``areas`` (``x``, ``y``, ``radius``; empty without
    concentration areas).
    """
    from simsrv.pipeline.cluster.zoning import ZONINGS
    from simsrv.pipeline.seeding import run_streams
    from simsrv.pipeline.simulation import build_world

    cluster = scenario.cluster
    if cluster is None or cluster.border_width is None:
        raise ValueError("zone_map_frame: the scenario has no [cluster] section")
    world = build_world(scenario, run_streams(scenario.run))
    zoning = ZONINGS.get(cluster.zoning, "cluster.zoning").build(
        world.map, cluster.nodes, cluster.border_width
    )
    state = None
    for _ in range(tick + 1):
        state = world.advance(1.0 / scenario.clients.rate_hz)
    assert state is not None
    low, high = world.map.extent_min[:2], world.map.extent_max[:2]
    cell = float((high - low).max()) / raster
    xs = np.arange(low[0] + cell / 2, high[0], cell)
    ys = np.arange(low[1] + cell / 2, high[1], cell)
    gx, gy = np.meshgrid(xs, ys)
    xy = np.column_stack([gx.ravel(), gy.ravel()])
    owner = zoning.zone_of(xy)
    zones = pd.DataFrame(
        {"x": xy[:, 0], "y": xy[:, 1], "node": owner, "border": _near_other(zoning, xy, owner)}
    )
    positions = np.asarray(state.positions)[:, :2]
    mine = zoning.zone_of(positions)
    players = pd.DataFrame(
        {
            "x": positions[:, 0],
            "y": positions[:, 1],
            "node": mine,
            "mirrored": _near_other(zoning, positions, mine),
        }
    )
    attractors = world.map.attractors
    areas = pd.DataFrame(columns=["x", "y", "radius"])
    if attractors is not None and len(attractors.radius):
        areas = pd.DataFrame(
            {
                "x": attractors.centres[:, 0],
                "y": attractors.centres[:, 1],
                "radius": attractors.radius,
            }
        )
    return zones, players, areas


def _near_other(zoning, xy: np.ndarray, owner: np.ndarray) -> np.ndarray:
    if zoning.nodes == 1 or len(xy) == 0:
        return np.zeros(len(xy), dtype=bool)
    near = zoning.near(xy)
    near[np.arange(len(xy)), owner] = False
    return near.any(axis=1)


def zone_map_figure(
    zones: pd.DataFrame, players: pd.DataFrame, areas: pd.DataFrame, title: str = ""
) -> Figure:
    """The zones (one pale colour per node, numbered at their centre), the border bands
    (grey), the concentration areas (dashed circles) and the players (dots in their node's
    colour; black rings: mirrored on a neighbour).  Frames of :func:`zone_map_frame`."""
    fig, ax = plt.subplots(figsize=(7.0, 6.6), layout="constrained")
    xs, ys = np.sort(zones.x.unique()), np.sort(zones.y.unique())
    grid = zones.pivot(index="y", columns="x", values="node").loc[ys, xs].to_numpy()
    border = zones.pivot(index="y", columns="x", values="border").loc[ys, xs].to_numpy()
    nodes = int(zones.node.max()) + 1
    palette = mpl.colormaps["tab20"]
    colours = [palette(i % 20) for i in range(nodes)]
    cell = (xs[1] - xs[0]) if len(xs) > 1 else 1.0
    extent = (xs[0] - cell / 2, xs[-1] + cell / 2, ys[0] - cell / 2, ys[-1] + cell / 2)
    cmap = mpl.colors.ListedColormap(colours)
    ax.imshow(
        grid,
        origin="lower",
        extent=extent,
        cmap=cmap,
        vmin=-0.5,
        vmax=nodes - 0.5,
        alpha=0.25,
        interpolation="nearest",
    )
    ax.imshow(
        np.where(border, 1.0, np.nan),
        origin="lower",
        extent=extent,
        cmap="Greys",
        vmin=0,
        vmax=2,
        alpha=0.45,
        interpolation="nearest",
    )
    for node, part in zones.groupby("node"):
        ax.text(
            part.x.mean(),
            part.y.mean(),
            str(node),
            ha="center",
            va="center",
            fontsize=9,
            color="black",
            alpha=0.6,
        )
    for row in areas.itertuples():
        ax.add_patch(
            plt.Circle((row.x, row.y), row.radius, fill=False, ls="--", lw=0.8, color="dimgrey")
        )
    ax.scatter(players.x, players.y, s=4, c=[colours[n] for n in players.node], lw=0)
    mirrored = players[players.mirrored]
    ax.scatter(
        mirrored.x,
        mirrored.y,
        s=14,
        facecolors="none",
        edgecolors="black",
        lw=0.5,
        label=f"mirrored on a neighbour ({len(mirrored)} of {len(players)} players)",
    )
    ax.set_xlim(extent[0], extent[1])
    ax.set_ylim(extent[2], extent[3])
    ax.set_aspect("equal")
    ax.set_xlabel("x (units)")
    ax.set_ylabel("y (units)")
    ax.legend(loc="upper right", fontsize=8, framealpha=0.9)
    ax.set_title(title or "Zones, border bands (grey) and players", fontsize=10)
    return fig
