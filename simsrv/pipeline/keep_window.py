"""Which of a run's records it keeps: a window of simulated time, or a number of frames.

A run digests its trace rows and its frame records as it goes and keeps none of them unless
asked (:func:`simsrv.pipeline.simulation.simulate`'s ``keep_trace`` and ``keep_frames``): a
:class:`KeepWindow` says which ones to keep, :data:`KEEP_ALL` keeps every one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simsrv.core.errors import InputError, shown


@dataclass(frozen=True)
class KeepWindow:
    """The records that overlap ``[start_s, end_s]`` (end > start_s and start < end_s, s).
    With ``frames = k``, ``end_s`` is at most the end of the ``k``-th frame that starts at or
    after ``start_s`` (the frames a Gantt chart shows)."""

    start_s: float = 0.0
    end_s: float = float("inf")
    frames: int | None = None

    def __post_init__(self) -> None:
        for name in ("start_s", "end_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
                raise InputError(
                    f"KeepWindow.{name}: must be a number of seconds, got {shown(value)}"
                )
            try:
                object.__setattr__(self, name, float(value))  # a window is in float seconds
            except OverflowError:
                raise InputError(
                    f"KeepWindow.{name}: must be a number of seconds a float holds "
                    f"(at most ~1.8e308), got {shown(value)}"
                ) from None
        if not 0 <= self.start_s <= self.end_s:
            raise InputError(
                f"KeepWindow: must have 0 <= start_s <= end_s, got {self.start_s!r}, {self.end_s!r}"
            )
        frames = self.frames
        if frames is not None and (
            isinstance(frames, bool) or not isinstance(frames, int | np.integer) or frames < 1
        ):
            raise InputError(
                f"KeepWindow.frames: must be a whole number >= 1 or None, got {shown(frames)}"
            )


KEEP_ALL = KeepWindow()
"""Every record of the run."""


class WindowEnd:
    """The end of ``window`` in simulated seconds, found as the run's frames are seen.

    :attr:`end_s` is ``window.end_s`` until ``window.frames`` frames have started at or after
    ``window.start_s``; then the end of the last of them, if earlier."""

    def __init__(self, window: KeepWindow) -> None:
        self.window = window
        self.end_s = window.end_s
        self._left = window.frames  # frames still to see in the window (None: no count)

    def see(self, times: np.ndarray) -> None:
        """The next frames in order: (frames, 2) start and end, s."""
        if not self._left or len(times) == 0:
            return
        inside = np.flatnonzero(times[:, 0] >= self.window.start_s)
        if len(inside) >= self._left:
            self.end_s = min(self.end_s, float(times[inside[self._left - 1], 1]))
            self._left = 0
        else:
            self._left -= len(inside)

    def overlaps(self, start_s: np.ndarray, end_s: np.ndarray) -> np.ndarray:
        """Which records (their start and end, s) overlap the window as far as it is known."""
        return (end_s > self.window.start_s) & (start_s < self.end_s)
