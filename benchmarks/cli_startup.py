"""Start-up time of the command line: ``simsrv --version``, ``simsrv run --help`` and the import
of ``simsrv.cli.main``.

Each command runs in ``--runs`` fresh processes; the table gives the median wall time and the
median CPU time (user + system of the child, which a loaded machine inflates less than the wall
time), in seconds.  Target: under 0.3 s wall for ``--version`` and ``run --help``.

Run it from outside the checkout to time another copy of the package, e.g.
``cd /tmp && PYTHONPATH=/path/to/other/checkout python /path/to/benchmarks/cli_startup.py``
(a ``python -c`` child puts its working directory first on ``sys.path``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "simsrv --version": ["-m", "simsrv", "--version"],
    "simsrv run --help": ["-m", "simsrv", "run", "--help"],
    "import simsrv.cli.main": ["-c", "import simsrv.cli.main"],
}


def time_once(args: list[str]) -> tuple[float, float]:
    """(wall s, CPU s) of one fresh ``python ARGS`` process."""
    before = os.times()
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per command")
    parser.add_argument("--json", action="store_true", help="print the medians as JSON")
    options = parser.parse_args()
    medians = {}
    for label, args in COMMANDS.items():
        samples = [time_once(args) for _ in range(options.runs)]
        medians[label] = {
            "wall_s": statistics.median(w for w, _ in samples),
            "cpu_s": statistics.median(c for _, c in samples),
        }
    if options.json:
        print(json.dumps(medians, indent=1))
        return 0
    load = os.getloadavg()[0]
    print(f"median of {options.runs} fresh processes (1-min load average {load:.1f})")
    for label, m in medians.items():
        print(f"  {label:<26} wall {m['wall_s']:6.3f} s   CPU {m['cpu_s']:6.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
