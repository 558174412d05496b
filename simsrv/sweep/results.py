"""The tables of a comparison, kept as runs finish and saved as Parquet after each one.

Saving after every finished run (each file written to a temporary name, then renamed) means an
interrupted or failed comparison keeps every run that finished; ``CompareResults.load`` reads a
directory back, so figures can be redrawn without rerunning.  The files carry page checksums
and a schema fingerprint (:mod:`simsrv.sweep.parquet_files`): a damaged one is left out with a
one-line warning instead of stopping the load.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa

from simsrv.sweep.parquet_files import DamagedFile, read_frame, reason_of, write_table
from simsrv.sweep.records import RunRecords

TABLES = ("runs", "breakdown", "cpu_load", "group_sizes", "response", "gantt")
META = "compare.json"
"""Small metadata file beside the tables: ``{"planned": runs in the grid}``."""
"""Table names; each is saved as ``<name>.parquet`` (columns in :mod:`simsrv.sweep.records`)."""


@dataclass
class CompareResults:
    """The comparison's tidy tables (see :mod:`simsrv.sweep.records` for their columns)."""

    runs: pd.DataFrame = field(default_factory=pd.DataFrame)
    breakdown: pd.DataFrame = field(default_factory=pd.DataFrame)
    cpu_load: pd.DataFrame = field(default_factory=pd.DataFrame)
    group_sizes: pd.DataFrame = field(default_factory=pd.DataFrame)
    response: pd.DataFrame = field(default_factory=pd.DataFrame)
    gantt: pd.DataFrame = field(default_factory=pd.DataFrame)
    planned: int = 0
    """Runs in the grid (``len(runs) < planned`` after an interruption)."""

    @classmethod
    def collect(cls, records: list[RunRecords], planned: int) -> CompareResults:
        """Tables from the records of finished runs, in the order given (the grid's)."""

        gantts = [r.gantt for r in records if r.gantt is not None]
        return cls(
            runs=pd.DataFrame([row for r in records for row in r.runs]),
            breakdown=pd.DataFrame([row for r in records for row in r.breakdown]),
            cpu_load=pd.DataFrame([row for r in records for row in r.cpu_load]),
            group_sizes=pd.DataFrame([row for r in records for row in r.group_sizes]),
            response=pd.DataFrame([row for r in records for row in r.response]),
            gantt=pd.concat(gantts, ignore_index=True) if gantts else pd.DataFrame(),
            planned=planned,
        )

    @property
    def complete(self) -> bool:
        return len(self.runs) == self.planned

    @property
    def failed(self) -> pd.DataFrame:
        """Rows of runs that raised an error."""
        if self.runs.empty:
            return self.runs
        return self.runs[self.runs["error"].notna()]

    @property
    def succeeded(self) -> pd.DataFrame:
        """Rows of runs that finished without error."""
        if self.runs.empty:
            return self.runs
        return self.runs[self.runs["error"].isna()]

    def save(self, directory: Path) -> None:
        """Write every table to ``directory/<name>.parquet`` (each file atomically; an empty
        table removes its file, so a directory never mixes two comparisons) and
        :data:`META` (``{"planned": N}``)."""
        directory.mkdir(parents=True, exist_ok=True)
        for name in TABLES:
            frame: pd.DataFrame = getattr(self, name)
            path = directory / f"{name}.parquet"
            if frame.empty:
                path.unlink(missing_ok=True)
                continue
            temporary = directory / f".{name}.parquet.tmp"
            # what frame.to_parquet(index=False) writes, with page checksums and a fingerprint
            write_table(pa.Table.from_pandas(frame, preserve_index=False), temporary)
            os.replace(temporary, path)
        (directory / META).write_text(json.dumps({"planned": self.planned}))

    @classmethod
    def load(cls, directory: Path, warn: Callable[[str], None] | None = None) -> CompareResults:
        """Read the tables a comparison saved in ``directory``.  A damaged table file
        (:mod:`simsrv.sweep.parquet_files`) is left out, as if missing, and reported in one
        line to ``warn`` (default: stderr)."""
        directory = Path(directory)
        tables, damaged = {}, []
        for name in TABLES:
            path = directory / f"{name}.parquet"
            tables[name] = pd.DataFrame()
            if path.exists():
                try:
                    tables[name] = read_frame(path)
                except DamagedFile as error:
                    damaged.append(error)
        if damaged:
            files = "; ".join(f"{d.path.name} ({d.reason})" for d in damaged)
            (warn or _warn)(
                f"damaged table file(s) in {directory} left out: {files}; run the comparison "
                "again to rebuild them"
            )
        planned = _planned(directory / META, warn or _warn)
        return cls(**tables, planned=len(tables["runs"]) if planned is None else planned)


def _planned(meta: Path, warn: Callable[[str], None]) -> int | None:
    """The runs planned, from :data:`META` (None: no such file, or damaged: said in one
    line)."""
    if not meta.exists():
        return None
    try:
        return int(json.loads(meta.read_text())["planned"])
    except (ValueError, KeyError, TypeError) as error:
        warn(f"damaged {meta} left out ({reason_of(error)}): the runs planned are not known")
        return None


def _warn(line: str) -> None:
    sys.stderr.write(f"simsrv: warning: {line}\n")
