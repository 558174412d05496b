"""A progress line on stderr: runs done, the last run finished, elapsed time and ETA.

On a terminal the line is redrawn in place; otherwise (a log file, CI) one line is printed per
finished run.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

BAR_WIDTH = 24


class Progress:
    """Report finished runs of a grid of ``total`` runs to ``stream`` (default stderr)."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total = total
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.live = self.stream.isatty()
        self.start = time.perf_counter()

    def update(self, label: str, error: str | None = None) -> None:
        """One more run finished (``label`` names it; ``error`` if it failed)."""
        self.done += 1
        elapsed = time.perf_counter() - self.start
        eta = elapsed / self.done * (self.total - self.done)
        filled = BAR_WIDTH * self.done // max(self.total, 1)
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        status = f"FAILED: {error}" if error else "ok"
        text = (
            f"[{bar}] {self.done}/{self.total}  {elapsed:.0f} s elapsed, ETA {eta:.0f} s  "
            f"{label} {status}"
        )
        if self.live:
            self.stream.write("\r\033[K" + text)
            if self.done == self.total or error:
                self.stream.write("\n")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End an unfinished live line (after an interruption)."""
        if self.live and self.done < self.total:
            self.stream.write("\n")
            self.stream.flush()
