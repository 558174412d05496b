"""Rewriting a platform file's fitted ``[costs]`` table, keeping its header by hand."""

from __future__ import annotations

from pathlib import Path


def replace_costs_table(path: Path, lines: list[str]) -> None:
    """Replace everything from the ``[costs]`` line of ``path`` on with ``lines`` (the first
    being the new ``[costs]`` heading); the hand-written header above it is kept."""
    text = path.read_text()
    head = text[: text.index("[costs]")]
    path.write_text(head + "\n".join(lines) + "\n")
