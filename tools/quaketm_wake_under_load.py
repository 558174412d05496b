"""The team wake-up of the primitive benchmark measured beside the testbed's clients.

Usage: python tools/quaketm_wake_under_load.py [OUT.csv]

Runs QuakeTM's serial build on CPU 1 with 32 clients (the load generator on CPU 0) for ~80 s
and, meanwhile, the primitive benchmark (``simsrv.testbed.primitives``, passive waits, its
threads free on both CPUs) three times: the wake-ups and lock hand-offs a sleeping OpenMP
thread sees when the clients share its CPUs (docs/quaketm.md, miss 1).  Prints the medians
beside an idle machine's and writes the tidy table.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pandas as pd

from simsrv.testbed.primitives import build_primitives, run_once, tidy
from simsrv.testbed.run import TestbedConfig, run_testbed


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    binary = build_primitives()
    config = TestbedConfig(
        server="quaketm-serial", clients=32, duration_s=80.0, warmup_s=1.0, port=27630
    )
    done = threading.Event()

    def serve() -> None:
        try:
            run_testbed(config)
        finally:
            done.set()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    time.sleep(12.0)  # sign-on and warm-up
    loaded = [tidy({"passive": run_once(binary, "passive", (0, 1))}).assign(repeat=r)
              for r in range(3) if not done.is_set()]  # fmt: skip
    server.join()
    idle = [tidy({"passive": run_once(binary, "passive", (0, 1))}).assign(repeat=r)
            for r in range(3)]  # fmt: skip
    table = pd.concat(
        [pd.concat(loaded).assign(load="clients"), pd.concat(idle).assign(load="idle")]
    )
    keep = table["quantity"].isin(("fork_wake_ns", "lock_handoff_ns"))
    medians = table[keep].groupby(["quantity", "parameter", "load"])["value_ns"].median().unstack()
    print((medians / 1e3).round(1).rename(columns=lambda c: f"{c} (us)").to_string())
    if out is not None:
        table.to_csv(out, index=False)


if __name__ == "__main__":
    main()
