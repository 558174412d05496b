"""Questions about paths users give, answered without raising.

``Path.exists()`` and ``Path.is_file()`` raise ``OSError`` for a name the system cannot even
look up (longer than ``NAME_MAX``: "File name too long", or a path with a NUL byte); for a
user's input that is just a file that is not there."""

from __future__ import annotations

from pathlib import Path


def exists(path: Path) -> bool:
    """``path.exists()``, False for a name the system cannot look up."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def is_file(path: Path) -> bool:
    """``path.is_file()``, False for a name the system cannot look up."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def is_dir(path: Path) -> bool:
    """``path.is_dir()``, False for a name the system cannot look up."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False
