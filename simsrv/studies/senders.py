"""Group statistics of the Cordeiro et al. runs with host-correlated senders and respawns.

Usage::

    python -m simsrv.studies.senders [--seeds 3] [--duration 10] [--workers 1]
                                     [--out docs/calibration-groups]

Every run is one of ``scenarios/cordeiro2007/{groups-only,fork-wait,fork-wait-cube}.toml``
with one of the ``CONDITIONS`` applied (``--set`` overrides; ``off`` is the scenario as
committed):

- ``hosts-*``: the 160 clients on 5 client machines of 32 processes [P §5.1], each machine
  sending its processes' packets of a tick within a window of one period (a saturated round
  robin), a quarter, a sixteenth of a period, or at once (0 s: the send jitter only).
- ``respawn-*``: shots kill (``players.hit_chance`` 0.3, the model's default, 0.05 or 1.0:
  QuakeWorld's shotgun does at most 6 x 4 = 24 damage to a player of 100 health, so a shot
  kills at most about a quarter of the time; the bots' hit rate is not published), the dead
  respawn at the map's spawn points as QuakeWorld does (``spawn_select = quake``,
  ``respawn_wait = button``), or at the next tick at a uniform point (the model's older rule).
- ``both``: 5 hosts with a window of a sixteenth of a period and the QuakeWorld respawn.

Columns of ``<out>.csv`` (one row per scenario, condition, seed): ``scenario``,
``condition``, ``seed``, ``frames_per_s``, ``messages_per_frame``, ``messages_per_frame_cv``
(standard deviation over mean of the packets per measured frame: how bursty the frames'
work is), ``groups_per_frame``, ``entities_per_group``, ``largest_group_share``,
``packets_per_grouped_entity`` (packets read over entities in groups, summed over the
measured frames: the share of a group's entities that sent, as in docs/calibration.md),
``near_spawn_share`` (share of players within 256 units of a spawn point, over the world's
ticks 100 to 400 of a world-only pass with the run's seed), ``deaths_per_s`` (same pass).
The table of docs/calibration-groups.md (means over seeds) is printed;
``<out>.png`` shows the groups/frame and entities/group of each condition against the published
pairs.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simsrv.core.toml_file import read_toml
from simsrv.pipeline.keep_window import KEEP_ALL
from simsrv.pipeline.load import apply_override, build_scenario
from simsrv.pipeline.result import run
from simsrv.pipeline.seeding import spawn_streams
from simsrv.pipeline.simulation import build_world
from simsrv.pipeline.summary import measured_frames
from simsrv.sweep.orphan import exit_with_parent

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ("groups-only", "fork-wait", "fork-wait-cube")
PUBLISHED = {  # groups/frame, entities/group [T §4.3.2, P §5.2]
    "groups-only": (4.0, 7.0),
    "fork-wait": (9.0, 8.0),
    "fork-wait-cube": (20.0, 4.0),
}
QUAKE_RESPAWN = (
    "players.respawn=true",
    "players.spawn_select=quake",
    "players.respawn_wait=button",
)
FIVE_HOSTS = ("clients.hosts=5",)


@dataclass(frozen=True)
class Condition:
    """``--set`` overrides, and (with hosts) the host window in client periods."""

    sets: tuple[str, ...] = ()
    burst_periods: float | None = None

    def overrides(self, rate_hz: float) -> list[str]:
        """The overrides, the host window resolved in seconds for ``rate_hz``."""
        if self.burst_periods is None:
            return list(self.sets)
        return [*self.sets, f"clients.host_burst_s={self.burst_periods / rate_hz!r}"]


CONDITIONS: dict[str, Condition] = {
    "off": Condition(),
    "hosts-round-robin": Condition(FIVE_HOSTS, 1.0),
    "hosts-1/4-period": Condition(FIVE_HOSTS, 0.25),
    "hosts-1/16-period": Condition(FIVE_HOSTS, 0.0625),
    "hosts-at-once": Condition(FIVE_HOSTS, 0.0),
    "respawn-quake": Condition(QUAKE_RESPAWN),
    "respawn-quake-hit-0.05": Condition((*QUAKE_RESPAWN, "players.hit_chance=0.05")),
    "respawn-quake-hit-1.0": Condition((*QUAKE_RESPAWN, "players.hit_chance=1.0")),
    "respawn-next-tick-random": Condition(("players.respawn=true",)),
    "both": Condition((*FIVE_HOSTS, *QUAKE_RESPAWN), 0.0625),
}
NEAR_SPAWN_UNITS = 256.0


def _row(job: tuple[str, str, int, float]) -> dict:
    name, condition, seed, duration = job
    raw = read_toml(ROOT / "scenarios" / "cordeiro2007" / f"{name}.toml")
    rate = float(raw["clients"]["rate_hz"])
    for item in [
        f"run.seed={seed}",
        f"run.duration_s={duration}",
        *CONDITIONS[condition].overrides(rate),
    ]:
        apply_override(raw, item)
    scenario = build_scenario(raw)
    result = run(scenario, keep_frames=KEEP_ALL)
    s = result.summary
    frames = measured_frames(scenario, result.frames)
    grouped = frames[frames["groups"] > 0]
    messages = frames["messages"].to_numpy(float)
    near, deaths = _world_pass(scenario, seed)
    return {
        "scenario": name,
        "condition": condition,
        "seed": seed,
        "frames_per_s": s["frames_per_s"],
        "messages_per_frame": s["messages_per_frame"],
        "messages_per_frame_cv": float(messages.std() / messages.mean()),
        "groups_per_frame": s["groups"]["mean_count"],
        "entities_per_group": s["groups"]["mean_size"],
        "largest_group_share": s["groups"]["largest_share"],
        "packets_per_grouped_entity": float(
            grouped["messages"].sum() / grouped["group_entities"].sum()
        ),
        "near_spawn_share": near,
        "deaths_per_s": deaths,
    }


def _world_pass(scenario, seed: int, ticks: int = 400, skip: int = 100) -> tuple[float, float]:
    """Share of players within ``NEAR_SPAWN_UNITS`` of a spawn point (ticks ``skip`` to
    ``ticks``) and deaths per simulated second, from the world alone."""
    world = build_world(scenario, spawn_streams(seed))
    dt = 1.0 / scenario.clients.rate_hz
    points = world.map.spawn_points[:, :2]
    near, deaths = [], 0
    for tick in range(ticks):
        state = world.advance(dt)
        if tick >= skip:
            gap = np.linalg.norm(state.positions[:, None, :2] - points[None, :, :], axis=2)
            near.append(float((gap.min(axis=1) <= NEAR_SPAWN_UNITS).mean()))
            deaths += int(state.killed.sum())
    return float(np.mean(near)), deaths / ((ticks - skip) * dt)


def table(rows: pd.DataFrame) -> str:
    """The docs table (Markdown): means over seeds, +- the seeds' standard deviation."""
    keys = ["scenario", "condition"]
    mean = rows.groupby(keys, sort=False).mean(numeric_only=True)
    sd = rows.groupby(keys, sort=False).std(numeric_only=True)
    lines = [
        "| scenario | condition | frames/s | messages/frame (CV) | groups/frame | "
        "entities/group | packets per grouped entity | players near a spawn point | "
        "deaths/s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (name, condition), m in mean.iterrows():
        d = sd.loc[(name, condition)]
        lines.append(
            f"| {name} | {condition} | {m.frames_per_s:.0f} | "
            f"{m.messages_per_frame:.1f} ({m.messages_per_frame_cv:.2f}) | "
            f"{m.groups_per_frame:.1f} ± {d.groups_per_frame:.1f} | "
            f"{m.entities_per_group:.2f} ± {d.entities_per_group:.2f} | "
            f"{m.packets_per_grouped_entity:.2f} | {m.near_spawn_share:.2f} | "
            f"{m.deaths_per_s:.0f} |"
        )
    return "\n".join(lines)


def figure(rows: pd.DataFrame, path: Path) -> None:
    """Groups/frame against entities/group per condition, one panel per scenario, with the
    published pair as a star."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mean = rows.groupby(["scenario", "condition"], sort=False).mean(numeric_only=True)
    fig, axes = plt.subplots(1, len(SCENARIOS), figsize=(13, 5.0))
    markers = dict(zip(CONDITIONS, "os^v<>dDPX", strict=True))
    for ax, name in zip(axes, SCENARIOS, strict=True):
        part = mean.xs(name, level="scenario")
        for condition, m in part.iterrows():
            ax.scatter(
                m.groups_per_frame, m.entities_per_group, marker=markers[condition], label=condition
            )
        g, e = PUBLISHED[name]
        ax.scatter([g], [e], marker="*", s=220, color="k", label="published")
        ax.add_patch(
            plt.Rectangle((0.8 * g, 0.8 * e), 0.4 * g, 0.4 * e, fill=False, ls="--", color="k")
        )
        ax.set_title(name)
        ax.set_xlabel("groups per frame")
        ax.set_ylabel("entities per group")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=6, fontsize=8)
    fig.suptitle(
        "Group statistics per condition, means over seeds (star: published; dashed: ±20 %)"
    )
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simsrv.studies.senders")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=10.0, help="simulated s per run")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=SCENARIOS)
    parser.add_argument("--conditions", nargs="+", default=list(CONDITIONS), choices=CONDITIONS)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "calibration-groups")
    parser.add_argument(
        "--figure-only", action="store_true", help="redraw <out>.png from <out>.csv, run nothing"
    )
    args = parser.parse_args(argv)
    if args.figure_only:
        figure(pd.read_csv(f"{args.out}.csv"), Path(f"{args.out}.png"))
        return 0
    jobs = [
        (name, condition, seed, args.duration)
        for name in args.scenarios
        for condition in args.conditions
        for seed in range(1, args.seeds + 1)
    ]
    with ProcessPoolExecutor(args.workers, initializer=exit_with_parent) as pool:
        rows = pd.DataFrame(pool.map(_row, jobs))
    rows.to_csv(f"{args.out}.csv", index=False)
    text = table(rows)
    if set(args.scenarios) == set(SCENARIOS):
        figure(rows, Path(f"{args.out}.png"))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
