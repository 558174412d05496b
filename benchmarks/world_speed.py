"""Speed of the world model (players moving on a map, action ranges, visibility) at scale.

Times ``World.advance`` (one client tick: mobility, wall collisions, room lookup, action
ranges by the cell list, PVS counts) for N random-waypoint players on a ``rooms`` map at
constant density (map side ``2048 * sqrt(N / 160)``, rooms ~1,000 units wide) and on an
``arena``; median wall time per tick over the measured ticks, after the settling walk.  The
map-geometry queries use a grid index (``simsrv.world.maps.box_index``), so a tick should cost
roughly O(N).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time

from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.seeding import spawn_streams
from simsrv.pipeline.simulation import build_world


def tick_ms(kind: str, players: int, ticks: int, seed: int) -> dict:
    """Median wall ms per tick and the setup time for one (map kind, player count)."""
    side = 2048.0 * math.sqrt(players / 160)
    overrides = [
        f"players.count={players}",
        "players.mobility=random-waypoint",
        "players.behaviour.settle_s=2",
        f"run.seed={seed}",
        f"map.kind={kind}",
    ]
    if kind == "rooms":
        k = max(1, round(side / 1024))
        overrides += [f"map.rows={k}", f"map.cols={k}", "map.room_size=992"]
    else:
        overrides += [f"map.size={side}"]
    scenario = load_scenario(None, overrides)
    start = time.perf_counter()
    world = build_world(scenario, spawn_streams(seed))
    setup = time.perf_counter() - start
    dt = 1.0 / scenario.clients.rate_hz
    times = []
    for _ in range(ticks):
        start = time.perf_counter()
        world.advance(dt)
        times.append(time.perf_counter() - start)
    return {
        "map": kind,
        "players": players,
        "solids": len(world.map.solid_min),
        "rooms": len(world.map.room_min),
        "setup_s": setup,
        "median_tick_ms": 1000 * statistics.median(times),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--players", type=int, nargs="+", default=[160, 1000, 10_000])
    parser.add_argument("--ticks", type=int, default=20)
    parser.add_argument("--json", dest="json_path", default=None)
    args = parser.parse_args()
    rows = [tick_ms(k, n, args.ticks, 1) for k in ("rooms", "arena") for n in args.players]
    for r in rows:
        print(
            f"{r['map']:6s} {r['players']:>6d} players, {r['solids']:>5d} solids, "
            f"{r['rooms']:>4d} rooms: {r['median_tick_ms']:8.2f} ms/tick "
            f"(setup incl. settling {r['setup_s']:.1f} s)"
        )
    if args.json_path:
        with open(args.json_path, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
