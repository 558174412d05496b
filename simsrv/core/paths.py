"""Questions about paths users give, answered without raising.

``Path.exists()`` and ``Path.is_file()`` raise ``OSError`` for a name the system cannot even
look up (longer than ``NAME_MAX``: "File name too long", or a path with a NUL byte); for a
user's input that is just a file that is not there."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from simsrv.core.errors import InputError


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


def read_regular_file(path: str | Path, field: str, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them.  Anything else
    (missing, a name the system cannot look up, a directory, a device such as ``/dev/zero``, a
    FIFO, which would block, unreadable, larger) is an :class:`InputError` naming ``field``;
    nothing is read beyond ``max_bytes + 1`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise InputError(f"{field}: file not found: {path}") from None
    except ValueError:  # a NUL byte in the name
        raise InputError(f"{field}: not a usable file name: {str(path)!r}") from None
    except OSError as error:
        raise InputError(f"{field}: cannot read {path}: {error.strerror}") from None
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode):
        os.close(fd)
        what = "a directory" if stat.S_ISDIR(status.st_mode) else "not a regular file"
        raise InputError(f"{field}: {path} is {what}")
    with os.fdopen(fd, "rb") as file:
        try:
            data = file.read(max_bytes + 1)
        except OSError as error:
            raise InputError(f"{field}: cannot read {path}: {error.strerror}") from None
    if len(data) > max_bytes:
        size = max(status.st_size, len(data))
        raise InputError(
            f"{field}: {path} is {size:,} bytes; such files are at most {max_bytes:,} bytes"
        )
    return data
