"""Reading the TOML files users give (scenarios, sweeps, platforms, maps) with one-line errors."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from simsrv.core.errors import InputError


def read_toml(path: str | Path, field: str = "scenario") -> dict[str, Any]:
    """Decode the TOML file ``path``; any reason it cannot be read or decoded (missing, a
    directory, unreadable, not UTF-8, not TOML) is an :class:`InputError` naming ``field``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{field}: file not found: {path}") from None
    except OSError as error:
        raise InputError(f"{field}: cannot read {path}: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise InputError(f"{field}: {path} is not UTF-8 text ({error.reason})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"{field}: {path} is not valid TOML: {error}") from None
