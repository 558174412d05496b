"""Where numba's first compile goes: run simsrv commands in this process with an empty cache.

    python tools/compile_profile.py [--top 40] -- run scenarios/cube-160.toml --duration-s 0.2

Prints each compiled function's exclusive compile CPU time (its own, without the callees it
compiled), summed over its specialisations, and the total.  Sets NUMBA_CACHE_DIR to a new
temporary directory before numba is imported, so nothing is loaded from an earlier cache.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections import defaultdict


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--keep-cache", action="store_true", help="use the default cache")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = [a for a in args.command if a != "--"]
    if not args.keep_cache:
        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="simsrv-compile-")

    from numba.core import event

    stack: list[list] = []
    own: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)

    class Listener(event.Listener):
        def on_start(self, ev):
            stack.append([ev.data["dispatcher"].py_func, time.process_time(), 0.0])

        def on_end(self, ev):
            func, start, children = stack.pop()
            total = time.process_time() - start
            name = f"{func.__module__}.{func.__qualname__}"
            own[name] += total - children
            count[name] += 1
            if stack:
                stack[-1][2] += total

    from simsrv.cli.main import main as cli_main

    started = time.process_time()
    with event.install_listener("numba:compile", Listener()):
        for part in " ".join(command).split(" ;; "):
            with contextlib.suppress(SystemExit):
                cli_main(part.split())
    wall = time.process_time() - started
    ranked = sorted(own.items(), key=lambda kv: -kv[1])
    for name, seconds in ranked[: args.top]:
        print(f"{seconds:7.2f} s  x{count[name]:<3d} {name}")
    print(f"{sum(own.values()):7.2f} s compiling, {len(own)} functions, CPU {wall:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
