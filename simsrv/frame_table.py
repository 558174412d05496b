"""A run's per-frame records as growable numpy columns.

Two writers fill them, in frame order: the Python frame loop appends one frame at a time
(:meth:`FrameTable.append`), the compiled frame loop (:mod:`simsrv.compiled_loop`) writes rows
straight into the columns (:meth:`FrameTable.reserve`, then :attr:`FrameTable.size` advanced).
The strategy's own per-frame values (:meth:`~simsrv.strategies.base.Strategy.frame_record`)
are integer columns when the strategy names them up front (strategies with a compiled loop),
else dicts gathered as they come.  :meth:`FrameTable.to_frame` gives the same DataFrame, column
types included, as building it from one tuple and one dict per frame.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from simsrv.workload.frame import FrameWorkload

FRAME_COLUMNS = (
    "frame",
    "start_s",
    "end_s",
    "duration_s",
    "messages",
    "commands",
    "replies",
    "choked",
    "physics",
    "queued",
)
"""Per-frame columns every strategy reports (see :class:`simsrv.simulation.SimulationOutput`)."""
INT_COLUMNS = ("messages", "commands", "replies", "choked", "physics", "queued")
"""The columns of :attr:`FrameTable.ints`, in order."""


def frame_row(frame: FrameWorkload, end_s: float, messages: int, queued: int) -> tuple:
    """One frame's values in :data:`FRAME_COLUMNS` order: ``frame`` ran until ``end_s`` s,
    read ``messages`` packets and left ``queued`` in its socket."""
    start_s = frame.start_s
    return (
        frame.index,
        start_s,
        end_s,
        end_s - start_s,
        messages,
        frame.commands,
        len(frame.reply_clients),
        frame.choked,
        frame.physics,
        queued,
    )


class FrameTable:
    """Per-frame records: :attr:`times` (capacity, 2) float64 (start and end, s),
    :attr:`ints` (capacity, 6) int64 (:data:`INT_COLUMNS`), and the strategy's values
    (:attr:`extra` (capacity, len(extra_names)) int64 when ``extra_names`` is given); the
    first :attr:`size` rows are valid and row ``i`` is frame ``i``."""

    def __init__(self, extra_names: tuple[str, ...] | None = None, capacity: int = 1024) -> None:
        self.extra_names = extra_names
        self.times = np.empty((capacity, 2))
        self.ints = np.empty((capacity, len(INT_COLUMNS)), np.int64)
        self.extra = np.empty((capacity, len(extra_names or ())), np.int64)
        self.extra_dicts: list[dict[str, Any]] = []
        """The strategy's values per frame, when it does not name them up front."""
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def reserve(self, rows: int) -> None:
        """Room for ``rows`` more rows after the stored ones (capacity doubles as needed)."""
        need, capacity = self.size + rows, len(self.times)
        if need <= capacity:
            return
        while capacity < need:
            capacity *= 2
        for name in ("times", "ints", "extra"):
            old = getattr(self, name)
            new = np.empty((capacity, old.shape[1]), old.dtype)
            new[: self.size] = old[: self.size]
            setattr(self, name, new)

    def append(self, row: tuple, extra: dict[str, Any] | None) -> None:
        """Store frame ``size``: ``row`` in :data:`FRAME_COLUMNS` order (:func:`frame_row`) and
        the strategy's values (None: it reports none)."""
        self.reserve(1)
        i = self.size
        self.times[i] = row[1], row[2]
        self.ints[i] = row[4:]
        if self.extra_names:
            self.extra[i] = [extra[name] for name in self.extra_names]
        elif extra is not None:
            self.extra_dicts.append(extra)
        self.size = i + 1

    def to_frame(self) -> pd.DataFrame:
        """The records as a DataFrame: :data:`FRAME_COLUMNS`, then the strategy's columns."""
        n = self.size
        if n == 0:  # the types a frame of no rows has always had
            frames = pd.DataFrame([], columns=list(FRAME_COLUMNS))
        else:
            start, end = self.times[:n, 0], self.times[:n, 1]
            columns: dict[str, np.ndarray] = {
                "frame": np.arange(n, dtype=np.int64),
                "start_s": start.copy(),
                "end_s": end.copy(),
                "duration_s": end - start,
            }
            for j, name in enumerate(INT_COLUMNS):
                columns[name] = self.ints[:n, j].copy()
            columns["physics"] = columns["physics"].astype(bool)
            frames = pd.DataFrame(columns)
        if self.extra_names and n:
            extra = pd.DataFrame(self.extra[:n].copy(), columns=list(self.extra_names))
            return pd.concat([frames, extra], axis=1)
        if self.extra_dicts:
            return pd.concat([frames, pd.DataFrame(self.extra_dicts)], axis=1)
        return frames
