"""The run's frame records taken as the run goes: digested, and kept only when asked.

A thread strategy runs ~2,000 frames a simulated second at 160 clients; kept whole, the frame
table grew by ~270 bytes a frame (``docs/performance.md``).  :class:`FrameStream` takes the
frames the trace stream no longer needs
(:attr:`simsrv.pipeline.trace_stream.TraceStream.closed_frames`) out of the run's
:class:`~simsrv.workload.frame_table.FrameTable` and gives them to

* the digest of the summary's frame metrics (:class:`simsrv.metrics.frame_digest.FrameDigest`),
* the kept frame table: the frames that overlap the window asked for
  (:class:`~simsrv.pipeline.keep_window.KeepWindow`), if any.

Whatever the blocks, the metrics and the kept frames are equal to the bit
(``tests/test_frame_stream.py``, ``tests/test_trace_stream.py``).
"""

from __future__ import annotations

import pandas as pd

from simsrv.metrics.frame_digest import FrameDigest
from simsrv.pipeline.keep_window import KeepWindow, WindowEnd
from simsrv.workload.frame_table import FrameBlock, FrameTable


class FrameStream:
    """Frames taken from ``table`` in blocks (see the module docstring): digested over the
    measured window ``(t0_s, t1_s)`` and kept in ``keep`` (None: none kept)."""

    def __init__(
        self, table: FrameTable, window: tuple[float, float], keep: KeepWindow | None = None
    ) -> None:
        self.table, self.keep = table, keep
        self.digest = FrameDigest(*window)
        self._kept: list[pd.DataFrame] = []
        self._keep_end = WindowEnd(keep) if keep is not None else None

    def release(self, upto: int) -> None:
        """The frames before number ``upto`` are no longer needed in the table: take them."""
        if upto <= self.table.base:
            return
        block = self.table.take(upto)
        self.digest.add(block)
        if self._keep_end is not None:
            self._keep_end.see(block.times)
            self._keep(block)

    def close(self) -> FrameDigest:
        """At the end of the run: every frame taken.  Returns the digest."""
        self.release(self.table.size)
        return self.digest

    def kept_frames(self) -> pd.DataFrame | None:
        """After :meth:`close`: the frames kept, indexed by frame number (none: an empty
        table), or None when the run keeps none."""
        if self.keep is None:
            return None
        if not self._kept:
            return self.table.peek(0).to_frame()
        return pd.concat(self._kept) if len(self._kept) > 1 else self._kept[0]

    def _keep(self, block: FrameBlock) -> None:
        """Keep the frames of ``block`` the window keeps."""
        inside = self._keep_end.overlaps(block.times[:, 0], block.times[:, 1])
        if inside.any():
            frames = block.to_frame()
            self._kept.append(frames if inside.all() else frames[inside])
