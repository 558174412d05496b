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
