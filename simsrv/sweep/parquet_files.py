"""Parquet files that tell when they are damaged, and a place to move damaged ones.

A file truncated by a crash or a full disk, or with a flipped bit, used to stop every reader
with a pyarrow traceback.  What is written here can be checked when read:

* **page checksums**: every data page carries the CRC-32 of its bytes (Parquet's own
  ``crc`` field, ``write_page_checksum``); reading verifies them
  (``page_checksum_verification``), so damaged values fail to read instead of reading as
  other values;
* **a schema fingerprint** (:data:`FINGERPRINT` in the file's key-value metadata): a hash of
  the column names, their types and the other metadata (pandas' column types), which the
  page checksums do not cover (they live in the footer).  Damage there could rename a column
  or change its type without any read failing; the fingerprint no longer matches.

Neither covers every byte: the footer holds the metadata twice (Parquet's key-value list and
Arrow's serialized schema), and a read may take it from the copy the fingerprint was not
checked on; it also holds statistics and offsets.  So a caller that names a file by its
content can also pass the **checksum of the whole file** (:func:`checksum`: BLAKE2b, 128 bits,
of its bytes, e.g. kept in its name as the sweep store does): the bytes are read once and
compared with it, pyarrow parses those bytes and pandas reads the same open file, so any
changed byte is found.  Without one (files written before a name carried it), the metadata of
the table read must also equal the footer's.

Only regular files are read (:func:`opened`): a FIFO, a directory or a symbolic link is
never opened to read (a FIFO would block the reader until someone writes to it); it is a
:class:`DamagedFile` too.

Anything else wrong with a file (a truncated footer, no ``PAR1`` magic, a footer that does not
decode) fails the read.  Each of these becomes :class:`DamagedFile` naming the file and the
first line of the reason.  Assumptions: files written before this module existed have neither
checksums nor fingerprint and are checked only by reading them; a file that disappears while
being read (a writer merged it away) is not damage, its ``FileNotFoundError`` propagates; a
file without read permission is not damage either.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from simsrv.core.errors import InputError

FINGERPRINT = b"simsrv.schema"
"""The key-value metadata key of the schema fingerprint."""
_NOT_HASHED = (FINGERPRINT, b"ARROW:schema")
CHECKSUM_DIGITS = 32
"""Hex digits of :func:`checksum` (BLAKE2b with a 16-byte digest)."""
DAMAGED_DIR = "damaged"
"""Where a store moves its damaged files: ``OUT/damaged/<UTC time>/<name>``."""
_READ_ERRORS = (pa.ArrowException, OSError, ValueError, KeyError, TypeError, IndexError)
"""What pyarrow (and pandas' metadata) raise on a damaged file (seen flipping bytes of a
store's part and truncating it: ``OSError`` for a checksum, ``ArrowInvalid`` for a footer,
``KeyError``, ``TypeError`` and ``JSONDecodeError`` for pandas' metadata)."""


class DamagedFile(Exception):
    """A Parquet file that cannot be read back as it was written."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path, self.reason = Path(path), reason
        super().__init__(f"{path}: {reason}")


def fingerprint(schema: pa.Schema) -> bytes:
    """The hash of ``schema``'s names, types and metadata (but its own key)."""
    text = [f"{f.name}\t{f.type}" for f in schema]
    metadata = schema.metadata or {}
    text += [repr((k, v)) for k, v in sorted(metadata.items()) if k not in _NOT_HASHED]
    return hashlib.sha256("\n".join(text).encode()).hexdigest()[:16].encode()


def fingerprinted(schema: pa.Schema) -> pa.Schema:
    """``schema`` with its fingerprint in its metadata (a file's schema whether or not it was
    written with one: files of one schema compare equal either way)."""
    metadata = {k: v for k, v in (schema.metadata or {}).items() if k != FINGERPRINT}
    metadata[FINGERPRINT] = fingerprint(schema)
    return schema.with_metadata(metadata)


def with_fingerprint(table: pa.Table) -> pa.Table:
    """``table`` with its schema's fingerprint in its metadata."""
    return table.replace_schema_metadata(fingerprinted(table.schema).metadata)


def checksum(data: bytes) -> str:
    """The checksum of a whole file's bytes: BLAKE2b, 16 bytes, as
    :data:`CHECKSUM_DIGITS` hex digits."""
    return hashlib.blake2b(data, digest_size=CHECKSUM_DIGITS // 2).hexdigest()


def table_bytes(table: pa.Table) -> bytes:
    """The bytes :func:`write_table` writes for ``table`` (the file, in memory)."""
    sink = pa.BufferOutputStream()
    pq.write_table(with_fingerprint(table), sink, compression="snappy", write_page_checksum=True)
    return sink.getvalue().to_pybytes()


def write_table(table: pa.Table, path: Path, *, durable: bool = False) -> None:
    """Write ``table`` to ``path`` (snappy, page checksums, fingerprint); ``durable``:
    ``fsync`` the file.  Not atomic: callers write a temporary name and rename it."""
    pq.write_table(with_fingerprint(table), path, compression="snappy", write_page_checksum=True)
    if durable:
        with open(path, "rb") as handle:
            os.fsync(handle.fileno())


@dataclass(frozen=True)
class OpenFile:
    """A regular file, open, and its bytes (:func:`opened`)."""

    path: Path
    """The name it was opened by."""
    data: bytes
    source: str
    """A name of this very file for a reader that wants a name (pandas): the open descriptor's
    ``/proc/self/fd/<n>`` where there is one (still this file if ``path`` is renamed,
    replaced or deleted meanwhile), else ``path``."""


@contextmanager
def opened(path: Path, expected: str | None = None) -> Iterator[OpenFile]:
    """The regular file ``path``, open for the ``with`` block, with its bytes compared with
    ``expected`` (its :func:`checksum`) if given; raises :class:`DamagedFile` for anything
    else (a FIFO, a directory, a symbolic link: none is read) or other bytes.  The file is
    opened without following a link and without blocking (a FIFO opens at once), then checked
    with ``fstat``, so nothing swapped in after a listing is read either."""
    path = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        handle = os.open(path, flags | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
    except (FileNotFoundError, PermissionError):
        raise
    except OSError as error:  # ELOOP: a symbolic link (O_NOFOLLOW)
        mode = _lstat_mode(path)
        if mode is not None and not stat.S_ISREG(mode):
            raise DamagedFile(path, not_regular(mode)) from None
        raise DamagedFile(path, reason_of(error)) from error
    try:
        status = os.fstat(handle)
        if not stat.S_ISREG(status.st_mode):
            raise DamagedFile(path, not_regular(status.st_mode))
        with os.fdopen(handle, "rb", closefd=False) as file:
            data = file.read()
        if expected is not None and checksum(data) != expected:
            raise DamagedFile(path, "its bytes differ from the checksum it was written with")
        yield OpenFile(path, data, _name_of_open(handle, status, path))
    finally:
        os.close(handle)


def file_bytes(path: Path, expected: str | None = None) -> bytes:
    """The bytes of the regular file ``path`` (:func:`opened`)."""
    with opened(path, expected) as file:
        return file.data


def not_regular(mode: int) -> str:
    """Why an entry of file mode ``mode`` is not read: what it is instead."""
    kinds = (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    kind = next((name for test, name in kinds if test(mode)), "not a file")
    return f"{kind}, not a regular file: not read"


def parse_columns(
    path: Path, data: bytes, columns: Sequence[str] | None = None
) -> tuple[pa.Schema, pa.Table]:
    """The checked whole schema and table (``columns`` only, if given) of the file bytes
    ``data`` read from ``path``; raises :class:`DamagedFile`."""
    with (
        _reading(path),
        pq.ParquetFile(_native(data), page_checksum_verification=True) as file,
    ):
        schema = file.schema_arrow
        _check(path, schema)
        table = file.read(columns=list(columns) if columns is not None else None)
        if table.schema.metadata != schema.metadata:
            raise DamagedFile(path, "the metadata read differs from the footer's schema")
        return schema, table


def read_columns(
    path: Path, columns: Sequence[str], expected: str | None = None
) -> tuple[pa.Schema, pa.Table]:
    """The checked whole schema of ``path`` and its ``columns`` (the whole file compared with
    the checksum ``expected``, if given); raises :class:`DamagedFile`."""
    return parse_columns(path, file_bytes(path, expected), columns)


def read_table(
    path: Path, columns: Sequence[str] | None = None, expected: str | None = None
) -> pa.Table:
    """The checked table of ``path`` (``columns`` only, if given; the fingerprint is checked
    against the whole schema either way, the whole file against ``expected``, if given);
    raises :class:`DamagedFile`."""
    return parse_columns(path, file_bytes(path, expected), columns)[1]


def read_frame(path: Path, expected: str | None = None) -> pd.DataFrame:
    """``path`` read by ``pandas.read_parquet`` (its types, as every reader of a store had
    them), checked (the whole file against ``expected``, if given); raises
    :class:`DamagedFile`."""
    with opened(path, expected) as file:
        return frame_of(file)


def frame_of(file: OpenFile) -> pd.DataFrame:
    """``file`` read as ``pandas.read_parquet`` reads it, checked (footer fingerprint, page
    checksums); raises :class:`DamagedFile`.  pandas reads the open file by its name
    (:attr:`OpenFile.source`): given the bytes in memory instead, pyarrow's reader now and
    then aborted the process at exit (``terminate called without an active exception``)."""
    with _reading(file.path):
        with pq.ParquetFile(_native(file.data)) as parquet:
            _check(file.path, parquet.schema_arrow)
        return pd.read_parquet(file.source, page_checksum_verification=True)


def reason_of(error: BaseException) -> str:
    """The first line of ``error``'s message, shortened: what a one-line report quotes."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text if len(text) <= 100 else text[:97] + "..."


def set_aside(paths: Sequence[Path], directory: Path) -> Path:
    """Move ``paths`` into a new ``directory/<UTC time>/`` (same file system: a rename; an
    existing name gets a numbered suffix); returns that folder.  Raises :class:`InputError`
    (one line) when ``directory`` cannot be one (e.g. a regular file has its name)."""
    check_directory(directory, "damaged store files are moved there")
    folder = directory / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"{folder}: cannot create it: {error.strerror}") from None
    for path in paths:
        target, n = folder / path.name, 1
        while os.path.lexists(target):
            target, n = folder / f"{path.name}.{n}", n + 1
        os.replace(path, target)
    return folder


def check_directory(path: Path, role: str) -> None:
    """Raise :class:`InputError` (one line naming ``path`` and its ``role``) if something
    other than a directory has the name ``path`` (a missing one is fine: it is created)."""
    mode = _lstat_mode(path)
    if mode is None or stat.S_ISDIR(mode):
        return
    if stat.S_ISLNK(mode) and os.path.isdir(path):
        return  # a link to a directory
    kind = not_regular(mode).split(",")[0] if not stat.S_ISREG(mode) else "a regular file"
    raise InputError(
        f"{path} is {kind}, not a directory ({role}): move it out of the way and run again"
    )


def _native(data: bytes) -> pa.BufferReader:
    """A reader of a copy of ``data`` in memory that pyarrow owns: pyarrow's threads then
    never hold a Python object (releasing one needs the interpreter, which is gone at exit)."""
    sink = pa.BufferOutputStream()
    sink.write(data)
    return pa.BufferReader(sink.getvalue())


def _name_of_open(handle: int, status: os.stat_result, path: Path) -> str:
    """``/proc/self/fd/<handle>`` if it names the open file, else ``path``."""
    name = f"/proc/self/fd/{handle}"
    try:
        return name if os.path.samestat(os.stat(name), status) else str(path)
    except OSError:
        return str(path)


def _lstat_mode(path: Path) -> int | None:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return None


def _check(path: Path, schema: pa.Schema) -> None:
    """Raise :class:`DamagedFile` if ``schema`` does not match its recorded fingerprint."""
    recorded = (schema.metadata or {}).get(FINGERPRINT)
    if recorded is not None and recorded != fingerprint(schema):
        raise DamagedFile(path, "the column names or types differ from those written")


@contextmanager
def _reading(path: Path) -> Iterator[None]:
    """Turn the errors of reading a damaged file into :class:`DamagedFile` (not a vanished
    file's ``FileNotFoundError``, not ``PermissionError``)."""
    try:
        yield
    except (DamagedFile, FileNotFoundError, PermissionError):
        raise
    except _READ_ERRORS as error:
        raise DamagedFile(Path(path), reason_of(error)) from error
