"""A run's per-frame records as growable numpy columns.

The frame loop (:mod:`simsrv.frame_steps`) writes rows straight into the columns after the
stored ones (:meth:`FrameTable.reserve`, then :attr:`FrameTable.size` advanced);
:meth:`FrameTable.append` adds one frame from Python (for tools and tests).  The strategy's own
per-frame values (:meth:`~simsrv.strategies.base.Strategy.frame_record`) are integer columns
when the strategy names them up front (strategies with a compiled loop), else dicts gathered
as they come.

The run takes the frames out as it goes (:meth:`FrameTable.take`: the frames before a number,
as a :class:`FrameBlock`), so the table holds only the frames not taken yet (from
:attr:`FrameTable.base`).  :meth:`FrameBlock.to_frame` gives the same DataFrame, column types
included, as building it from one tuple and one dict per frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from simsrv.core.uninitialised import empty

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
"""Per-frame columns every strategy reports (see
:class:`simsrv.pipeline.simulation.SimulationOutput`)."""
INT_COLUMNS = ("messages", "commands", "replies", "choked", "physics", "queued")
"""The columns of :attr:`FrameTable.ints`, in order."""


class FrameTable:
    """Per-frame records: :attr:`times` (capacity, 2) float64 (start and end, s),
    :attr:`ints` (capacity, 6) int64 (:data:`INT_COLUMNS`), and the strategy's values
    (:attr:`extra` (capacity, len(extra_names)) int64 when ``extra_names`` is given).  Frames
    ``base`` to ``size - 1`` are stored, frame ``base + i`` in row ``i`` (:attr:`stored` rows);
    the frames before :attr:`base` were taken (:meth:`take`)."""

    def __init__(self, extra_names: tuple[str, ...] | None = None, capacity: int = 1024) -> None:
        self.extra_names = extra_names
        self.times = empty((capacity, 2))
        self.ints = empty((capacity, len(INT_COLUMNS)), np.int64)
        self.extra = empty((capacity, len(extra_names or ())), np.int64)
        self.extra_dicts: list[dict[str, Any]] = []
        """The strategy's values per stored frame, when it does not name them up front."""
        self.size = 0
        """Frames recorded (the next frame's number)."""
        self.base = 0
        """Frames taken (the first stored frame's number)."""

    def __len__(self) -> int:
        return self.size

    @property
    def stored(self) -> int:
        """Rows stored: frames ``base`` to ``size - 1``."""
        return self.size - self.base

    def reserve(self, rows: int) -> None:
        """Room for ``rows`` more rows after the stored ones (capacity doubles as needed)."""
        stored = self.stored
        need, capacity = stored + rows, len(self.times)
        if need <= capacity:
            return
        while capacity < need:
            capacity *= 2
        for name in ("times", "ints", "extra"):
            old = getattr(self, name)
            new = empty((capacity, old.shape[1]), old.dtype)
            new[:stored] = old[:stored]
            setattr(self, name, new)

    def append(self, row: tuple, extra: dict[str, Any] | None) -> None:
        """Store frame ``size``: ``row`` in :data:`FRAME_COLUMNS` order and
        the strategy's values (None: it reports none)."""
        self.reserve(1)
        i = self.stored
        self.times[i] = row[1], row[2]
        self.ints[i] = row[4:]
        if self.extra_names:
            self.extra[i] = [extra[name] for name in self.extra_names]
        elif extra is not None:
            self.extra_dicts.append(extra)
        self.size += 1

    def record_extra(self, row: int, extra: dict[str, Any]) -> None:
        """The strategy's values of the frame in stored row ``row`` (the last frame written:
        frames are recorded in order)."""
        if self.extra_names:
            self.extra[row] = [extra[name] for name in self.extra_names]
        else:
            self.extra_dicts.append(extra)

    def stored_times(self) -> np.ndarray:
        """(stored, 2): the stored frames' start and end, s (a view)."""
        return self.times[: self.stored]

    def peek(self, n: int) -> FrameBlock:
        """The first ``n`` stored frames, copied."""
        return FrameBlock(
            self.base,
            self.times[:n].copy(),
            self.ints[:n].copy(),
            self.extra_names,
            self.extra[:n].copy() if self.extra_names else None,
            self.extra_dicts[:n],
        )

    def take(self, upto: int) -> FrameBlock:
        """The frames from :attr:`base` to ``upto - 1``, removed from the table."""
        n = max(0, min(upto, self.size) - self.base)
        block = self.peek(n)
        rest = self.stored - n
        for array in (self.times, self.ints, self.extra):
            array[:rest] = array[n : n + rest]
        del self.extra_dicts[:n]
        self.base += n
        return block


@dataclass(frozen=True)
class FrameBlock:
    """Frames ``first`` to ``first + len - 1`` taken from a :class:`FrameTable`: its columns
    ``times`` (start and end, s), ``ints`` (:data:`INT_COLUMNS`) and the strategy's values
    (``extra`` named ``extra_names``, or one dict per frame in ``extra_dicts``)."""

    first: int
    times: np.ndarray
    ints: np.ndarray
    extra_names: tuple[str, ...] | None
    extra: np.ndarray | None
    extra_dicts: list[dict[str, Any]]

    def __len__(self) -> int:
        return len(self.times)

    def names(self) -> tuple[str, ...]:
        """Its columns: :data:`FRAME_COLUMNS`, then the strategy's."""
        if self.extra_names:
            return (*FRAME_COLUMNS, *self.extra_names)
        return (*FRAME_COLUMNS, *(self.extra_dicts[0] if self.extra_dicts else ()))

    def column(self, name: str) -> np.ndarray:
        """A numeric column's values."""
        if name in ("start_s", "end_s"):
            return self.times[:, 0 if name == "start_s" else 1]
        if name in INT_COLUMNS:
            return self.ints[:, INT_COLUMNS.index(name)]
        if self.extra_names:
            return self.extra[:, self.extra_names.index(name)]
        return np.array(self.values(name))

    def values(self, name: str) -> list[Any]:
        """A strategy's column as a list (e.g. BSP-group's ``group_sizes`` tuples)."""
        if self.extra_names:
            return self.extra[:, self.extra_names.index(name)].tolist()
        return [d[name] for d in self.extra_dicts]

    def to_frame(self) -> pd.DataFrame:
        """The frames as a DataFrame indexed by frame number, with the same columns and types
        as building it from one tuple and one dict per frame."""
        n, first, times = len(self), self.first, self.times
        if n == 0:  # the types a frame of no rows has always had
            frames = pd.DataFrame([], columns=list(FRAME_COLUMNS))
        else:
            start, end = times[:, 0], times[:, 1]
            columns: dict[str, np.ndarray] = {
                "frame": np.arange(first, first + n, dtype=np.int64),
                "start_s": start,
                "end_s": end,
                "duration_s": end - start,
            }
            for j, name in enumerate(INT_COLUMNS):
                columns[name] = self.ints[:, j]
            columns["physics"] = columns["physics"].astype(bool)
            frames = pd.DataFrame(columns)
        if self.extra_names and n:
            extra = pd.DataFrame(self.extra, columns=list(self.extra_names))
            frames = pd.concat([frames, extra], axis=1)
        elif self.extra_dicts:
            frames = pd.concat([frames, pd.DataFrame(self.extra_dicts)], axis=1)
        frames.index = pd.RangeIndex(first, first + n)  # the frame numbers
        return frames
