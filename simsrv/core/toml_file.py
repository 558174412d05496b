"""Reading the TOML files users give (scenarios, sweeps, platforms, maps) with one-line errors."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from simsrv.core.errors import InputError
from simsrv.core.paths import read_regular_file

MAX_TOML_BYTES = 1 << 20
"""Largest scenario, sweep, platform or profile file, bytes (1 MiB): the largest shipped is a
few KiB; a bigger file is refused before Python's TOML parser spends seconds on it."""

MAX_DATA_TOML_BYTES = 64 << 20
"""Largest TOML *data* file (an exported map, :mod:`simsrv.world.maps.file`), bytes."""


def read_toml(
    path: str | Path, field: str = "scenario", max_bytes: int = MAX_TOML_BYTES
) -> dict[str, Any]:
    """Decode the TOML file ``path``; any reason it cannot be read or decoded (missing, not
    a regular file, unreadable, larger than ``max_bytes``, not UTF-8, not TOML, nested too
    deep) is an :class:`InputError` naming ``field``."""
    data = read_regular_file(path, field, max_bytes)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{field}: {path} is not UTF-8 text ({error.reason})") from None
    return decode_toml(text, f"{field}: {path}")


def decode_toml(text: str, where: str) -> dict[str, Any]:
    """``tomllib.loads(text)``; a decoding error or a document nested too deep for the parser
    is an :class:`InputError` starting with ``where``."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"{where} is not valid TOML: {error}") from None
    except RecursionError:
        raise InputError(f"{where} is not valid TOML: arrays or tables nested too deep") from None
    except ValueError:  # an integer of more digits than Python converts (4,300)
        raise InputError(f"{where} holds a number too long to read") from None
