"""A sweep's results on disk: a Parquet dataset with one file per finished run.

``OUT/runs/run-<scenario_hash>.parquet`` holds one row (columns: the varied parameters by
dotted name, ``seed_index``, ``seed``, then :func:`simsrv.sweep.records.metrics_row`).  Each
file is written to a temporary name and renamed, so a process killed at any moment (even
``kill -9``) leaves only whole files: the store loses at most the runs in flight and is never
corrupt.  A run is identified by the hash of its resolved scenario (every parameter and the
seed), so a resumed sweep skips exactly the runs already stored; failed runs (a row with an
``error``) are run again.  ``pandas.read_parquet(OUT / "runs")`` reads the whole dataset.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from simsrv.sweep.records import scenario_hash
from simsrv.sweep.spec import Sweep, SweepRun

RUNS_DIR = "runs"


class SweepStore:
    """The run files under ``out``."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.runs_dir = out / RUNS_DIR

    def path(self, run: SweepRun) -> Path:
        """The file of ``run``."""
        return self.runs_dir / f"run-{scenario_hash(run.scenario)}.parquet"

    def write(self, row: dict[str, Any], run: SweepRun) -> None:
        """Store one finished run's row (atomically)."""
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        target = self.path(run)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        pd.DataFrame([row]).to_parquet(tmp, index=False)
        os.replace(tmp, target)

    def done(self, run: SweepRun) -> bool:
        """Whether ``run`` is stored without an error."""
        path = self.path(run)
        if not path.exists():
            return False
        return pd.read_parquet(path, columns=["error"])["error"].isna().all()

    def table(self, sweep: Sweep) -> pd.DataFrame:
        """The stored rows of ``sweep``'s runs, in the sweep's order (point, then seed)."""
        frames = [pd.read_parquet(self.path(r)) for r in sweep.runs if self.path(r).exists()]
        if not frames:
            return pd.DataFrame()
        return pd.concat(frames, ignore_index=True)
