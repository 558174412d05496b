"""Run `simsrv run --json` on every scenario and the benchmarks' variants from one checkout.

Usage: python tools/bit_identity.py CHECKOUT OUT_DIR [FILTER]

Writes one JSON per case (minus `wall_time_s` and `simsrv_version`) into OUT_DIR, two runs at a
time.  Run it on the checkout before a refactor and after, then `diff -r` the two directories:
a refactor or a speed-up must leave them identical.  Each checkout gets its own numba cache
(`NUMBA_CACHE_DIR=OUT_DIR/.numba`): numba does not recompile a cached function when a function
it calls, in another file, has changed, so a shared or stale cache can hide a difference.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

STRATEGIES = ("sequential", "bsp-group", "abdelkhalek", "area-quadrant")
VARIANTS = {
    "": [],
    "-bg": ["machine.background=[0.3,0.1]", "run.duration_s=3"],
    "-smt": ["machine.cpus=4", 'machine.platform="abdelkhalek2004-xeon-ht"', "run.duration_s=3"],
    "-cpus1": ["machine.cpus=1", "run.duration_s=3"],
}

CLUSTER_VARIANTS = {
    "cluster4-load-aware": ['cluster.zoning="load-aware"', "cluster.rebalance_s=0.5"],
    "cluster4-areanode-tcp": ['cluster.zoning="areanode"', 'cluster.interconnect="tcp"'],
    "cluster4-actions": ["cluster.remote_actions=true", "run.duration_s=3"],
    "cluster4-actions-load-aware-tcp": [
        "cluster.remote_actions=true",
        'cluster.zoning="load-aware"',
        'cluster.interconnect="tcp"',
        "run.duration_s=3",
    ],
    "cluster4-bounded-socket": ["clients.socket_buffer_messages=64", "players.count=1200"],
    "cluster4-nodes7": ["cluster.nodes=7", "players.count=1400", "run.duration_s=2"],
    "cluster4-nodes1": ["cluster.nodes=1"],
    "cluster16-load-aware": ['cluster.zoning="load-aware"', "run.duration_s=1"],
    "cluster4-light": ["players.count=200"],
    "cluster4-light-actions-load-aware": [
        "players.count=240",
        "cluster.remote_actions=true",
        'cluster.zoning="load-aware"',
        "cluster.rebalance_s=0.5",
    ],
    "cluster4-light-bounded-tcp": [
        "players.count=300",
        "clients.socket_buffer_messages=8",
        'cluster.interconnect="tcp"',
    ],
    "cluster16-light": ["players.count=1600", "run.duration_s=1"],
    "cluster16-actions-tcp": [
        "cluster.remote_actions=true",
        'cluster.interconnect="tcp"',
        "run.duration_s=1",
    ],
}
"""Cluster runs beyond the shipped scenarios: every zoning, both interconnect profiles,
cross-border actions, a bounded socket, an odd node count and one node; loaded and light (the
nodes idle between frames)."""


def cases(tree: Path) -> dict[str, tuple[str, list[str]]]:
    """name -> (scenario path relative to the checkout, --set overrides)."""
    out = {}
    for path in sorted((tree / "scenarios").rglob("*.toml")):
        relative = str(path.relative_to(tree))
        out[relative.replace("/", "__")] = (relative, [])
    for strategy in STRATEGIES:
        for suffix, sets in VARIANTS.items():
            name = f"cube-{strategy}{suffix}"
            out[name] = ("scenarios/cube-160.toml", [f"server.strategy={strategy}", *sets])
    nowait = ["server.strategy=bsp-group", 'server.options.reap="nowait"', "run.duration_s=3"]
    out["cube-bsp-nowait"] = ("scenarios/cube-160.toml", nowait)
    for name, sets in CLUSTER_VARIANTS.items():
        scenario = "scenarios/cluster/nodes4-cpus2-640.toml"
        if name.startswith("cluster16"):
            scenario = "scenarios/cluster/nodes16-cpus8-10000.toml"
        out[name] = (scenario, sets)
    return out


def main() -> int:
    tree, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    only = sys.argv[3] if len(sys.argv) > 3 else ""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(out / ".numba"), "PYTHONPATH": str(tree)}

    def run(item: tuple[str, tuple[str, list[str]]]) -> str:
        name, (scenario, sets) = item
        command = [sys.executable, "-m", "simsrv", "run", scenario, "--json"]
        for value in sets:
            command += ["--set", value]
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            (out / f"{name}.err").write_text(done.stdout + done.stderr)
            return f"{name} exit {done.returncode}"
        result = json.loads(done.stdout)
        for key in ("wall_time_s", "simsrv_version"):
            result.pop(key, None)
        (out / f"{name}.json").write_text(json.dumps(result, sort_keys=True, indent=1))
        return f"{name} ok"

    selected = [item for item in cases(tree).items() if only in item[0]]
    with ThreadPoolExecutor(2) as pool:
        for line in pool.map(run, selected):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
