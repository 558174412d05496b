"""Wall time of the README's main job: ``simsrv compare scenarios/cube-160.toml --duration-s 2``.

Runs the exact command (a fresh process each time, all default workers) ``--runs`` times and
reports the median and range of the wall time, and the largest peak resident memory of any
one process (the command or one of its pool workers).  Target: well under
a minute on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMAND = ["compare", str(ROOT / "scenarios" / "cube-160.toml"), "--duration-s", "2"]
TARGET_S = 60.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3, help="fresh-process runs (median)")
    args = parser.parse_args()
    simsrv = Path(sys.executable).with_name("simsrv")
    walls = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            subprocess.run(
                [str(simsrv), *COMMAND, "--out", out],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            walls.append(time.perf_counter() - start)
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    median = statistics.median(walls)
    print(
        f"machine: {os.cpu_count()} CPUs, {platform.machine()}, Python {platform.python_version()}"
    )
    print(f"simsrv {' '.join(COMMAND[:1] + ['scenarios/cube-160.toml'] + COMMAND[2:])}")
    print(
        f"wall time: median {median:.1f} s (range {min(walls):.1f}-{max(walls):.1f} s, "
        f"{args.runs} runs); largest peak RSS of one process {peak_mb:.0f} MB"
    )
    verdict = "met" if median < TARGET_S else f"MISSED by {median - TARGET_S:.1f} s"
    print(f"target: < {TARGET_S:.0f} s: {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
