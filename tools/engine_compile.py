"""Time the machine engine's first compile alone (empty cache): one plan per path.

python tools/engine_compile.py
"""

import os
import tempfile
import time

if "NUMBA_CACHE_DIR" not in os.environ:
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="simsrv-engine-")

from simsrv.machine.executor import Machine  # noqa: E402
from simsrv.machine.plan import (  # noqa: E402
    Acquire,
    BarrierWait,
    Compute,
    FramePlan,
    Release,
    Thread,
)


def main() -> None:
    plan = FramePlan(
        threads=(
            Thread("a", 0, (Compute("x", 5.0), Acquire("L"), Compute("y", 2.0), Release("L"),
                            BarrierWait("b"), Compute("x", 1.0))),
            Thread("b", 1, (Compute("x", 3.0), Acquire("L"), Compute("y", 2.0), Release("L"),
                            BarrierWait("b"), Compute("x", 1.0))),
        ),
        barriers={"b": 2},
    )  # fmt: skip
    started = time.process_time()
    machine = Machine(2)
    machine.execute(plan, 0, 0.0)
    machine.finish()
    print(f"engine first compile (CPU) {time.process_time() - started:.1f} s")


if __name__ == "__main__":
    main()
