"""One pass (seed) of a stored testbed campaign as a store of its own, to fit per sitting.

The standard campaign measures every condition once per seed, in passes minutes apart; the
calibration pools the passes.  To see how far the fitted costs move between two sittings,
fit each pass alone::

    python tools/testbed_sitting.py results/testbed 1 /tmp/pass1
    simsrv calibrate this-machine-mvdsv --data /tmp/pass1 --out /tmp/pass1.toml
    python tools/testbed_sitting.py results/testbed 3 /tmp/pass3
    simsrv calibrate this-machine-mvdsv --data /tmp/pass3 --out /tmp/pass3.toml

``OUT/runs.parquet`` holds the pass's rows; ``OUT/runs`` links to the campaign's run
directories (nothing is copied).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path, help="a campaign store (runs.parquet, runs/)")
    parser.add_argument("seed", type=int, help="the pass to keep")
    parser.add_argument("out", type=Path, help="the new store")
    args = parser.parse_args()
    table = pd.read_parquet(args.store / "runs.parquet")
    kept = table[table["config.seed"] == args.seed]
    if kept.empty:
        raise SystemExit(f"{args.store}: no run of seed {args.seed}")
    args.out.mkdir(parents=True, exist_ok=True)
    kept.to_parquet(args.out / "runs.parquet", index=False)
    link = args.out / "runs"
    if not link.exists():
        link.symlink_to((args.store / "runs").resolve())
    print(f"{args.out}: {len(kept)} runs of seed {args.seed}")


if __name__ == "__main__":
    main()
