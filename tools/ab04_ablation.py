"""The runs behind docs/abdelkhalek.md's ablation and sensitivity tables of the strategy's
mechanisms: per variant and seed (1-3), the waits at 112 clients and the optimised lock waits
(3 simulated s), the threaded capacity and, when the players change, the sequential one (steps
of 8 from 64, the capacity rule of simsrv.sweep.capacity), as `simsrv validate --quick`
measures AB04's rows.  Usage: python tools/ab04_ablation.py [VARIANT ...] (all by default);
prints one line per result, then all of them as JSON (~8 min on 2 cores)."""

from __future__ import annotations

import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "scenarios" / "abdelkhalek2004"
QUAKE_BOT = ["players.behaviour={}", 'players.mobility="quake-bot"']
NONE_OF_THEM = [
    'server.options.lock_scope="two-nodes"',
    "server.options.client_locks=false",
    "server.options.gamestate_share=0",
    *QUAKE_BOT,
]
VARIANTS = {
    "all mechanisms (default)": [],
    "two locks instead of the leaf-to-root path": ['server.options.lock_scope="two-nodes"'],
    "no client-record locks": ["server.options.client_locks=false"],
    "no game-state lock": ["server.options.gamestate_share=0"],
    "quake-bot players instead of replay": QUAKE_BOT,
    "none of them (the earlier model)": NONE_OF_THEM,
    "gamestate_share 0.1": ["server.options.gamestate_share=0.1"],
    "gamestate_share 0.5": ["server.options.gamestate_share=0.5"],
    "gamestate_share 1.0": ["server.options.gamestate_share=1.0"],
    "1 route": ["players.behaviour.routes=1"],
    "4 routes": ["players.behaviour.routes=4"],
    "32 routes": ["players.behaviour.routes=32"],
    "8 routes, offsets < 10 s": ["players.behaviour.max_offset_s=10"],
    "8 routes, all offsets 0": ["players.behaviour.max_offset_s=0"],
}
PLAYER_CHANGES = ("players.",)


def job(kind, name, sets, seed):
    from simsrv.pipeline.load import load_scenario
    from simsrv.pipeline.result import run
    from simsrv.sweep.capacity import find_capacity

    common = [f"run.seed={seed}", "run.duration_s=3.0"]
    if kind == "waits":
        sc = load_scenario(ROOT / "threads8-region.toml", [*common, "players.count=112", *sets])
        s = run(sc).summary
        return (
            kind,
            name,
            seed,
            (s["lock_wait_fraction"], s["barrier_wait_fraction"], s["any_waiting_fraction"]),
        )
    if kind == "opt":
        sc = load_scenario(
            ROOT / "threads8-region-optimized.toml", [*common, "players.count=112", *sets]
        )
        return kind, name, seed, run(sc).summary["lock_wait_fraction"]
    path = ROOT / ("threads8-region.toml" if kind == "cap" else "sequential.toml")
    seq_sets = [x for x in sets if x.startswith(PLAYER_CHANGES)] if kind == "seq" else sets
    r = find_capacity(str(path), [*common, *seq_sets], start=64, step=8, min_reply_ratio=0.8)
    return kind, name, seed, r.capacity_clients


def main():
    only = sys.argv[1:] or list(VARIANTS)
    jobs = []
    for name in only:
        sets = VARIANTS[name]
        for seed in (1, 2, 3):
            jobs += [
                ("waits", name, sets, seed),
                ("opt", name, sets, seed),
                ("cap", name, sets, seed),
            ]
            if (
                any(x.startswith(PLAYER_CHANGES) for x in sets)
                or name == "all mechanisms (default)"
            ):
                jobs.append(("seq", name, sets, seed))
    out = {}
    with ProcessPoolExecutor(2) as pool:
        for kind, name, seed, value in pool.map(job, *zip(*jobs, strict=True)):
            out.setdefault(name, {}).setdefault(kind, {})[seed] = value
            print(kind, name, seed, value, flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
