"""Writing a fitted platform file: atomically, keeping its hand-written header."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename, so an interrupted
    write never leaves half a platform file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def replace_costs_table(source: Path, out: Path, lines: list[str]) -> None:
    """Write ``source`` to ``out`` with everything from its ``[costs]`` line on replaced by
    ``lines`` (the first being the new ``[costs]`` heading); the hand-written header above it
    is kept.  ``out`` may be ``source``."""
    text = source.read_text()
    head = text[: text.index("[costs]")]
    write_atomic(out, head + "\n".join(lines) + "\n")
