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

Anything else wrong with a file (a truncated footer, no ``PAR1`` magic, a footer that does not
decode, a missing column) fails the read.  Each of these becomes :class:`DamagedFile` naming
the file and the first line of the reason.  Assumptions: files written before this module
existed have neither checksums nor fingerprint and are checked only by reading them; a file
that disappears while being read (a writer merged it away) is not damage, its
``FileNotFoundError`` propagates; a file without read permission is not damage either.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

FINGERPRINT = b"simsrv.schema"
"""The key-value metadata key of the schema fingerprint."""
_NOT_HASHED = (FINGERPRINT, b"ARROW:schema")
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


def write_table(table: pa.Table, path: Path, *, durable: bool = False) -> None:
    """Write ``table`` to ``path`` (snappy, page checksums, fingerprint); ``durable``:
    ``fsync`` the file.  Not atomic: callers write a temporary name and rename it."""
    pq.write_table(with_fingerprint(table), path, compression="snappy", write_page_checksum=True)
    if durable:
        with open(path, "rb") as handle:
            os.fsync(handle.fileno())


def read_columns(path: Path, columns: Sequence[str]) -> tuple[pa.Schema, pa.Table]:
    """The checked whole schema of ``path`` and its ``columns``; raises
    :class:`DamagedFile`."""
    with _reading(path), pq.ParquetFile(path, page_checksum_verification=True) as file:
        _check(path, file.schema_arrow)
        return file.schema_arrow, file.read(columns=list(columns))


def read_table(path: Path, columns: Sequence[str] | None = None) -> pa.Table:
    """The checked table of ``path`` (``columns`` only, if given; the fingerprint is checked
    against the whole schema either way); raises :class:`DamagedFile`."""
    with _reading(path), pq.ParquetFile(path, page_checksum_verification=True) as file:
        _check(path, file.schema_arrow)
        return file.read(columns=list(columns) if columns is not None else None)


def read_frame(path: Path) -> pd.DataFrame:
    """``path`` read by ``pandas.read_parquet`` (its types, as every reader of a store had
    them), checked; raises :class:`DamagedFile`.  The footer's fingerprint is checked on a
    first open: a file replaced between the two opens (a run file written again) is a whole
    file, and its pages are still checked."""
    with _reading(path):
        with pq.ParquetFile(path) as file:
            _check(path, file.schema_arrow)
        return pd.read_parquet(path, page_checksum_verification=True)


def reason_of(error: BaseException) -> str:
    """The first line of ``error``'s message, shortened: what a one-line report quotes."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text if len(text) <= 100 else text[:97] + "..."


def set_aside(paths: Sequence[Path], directory: Path) -> Path:
    """Move ``paths`` into a new ``directory/<UTC time>/`` (same file system: a rename; an
    existing name gets a numbered suffix); returns that folder."""
    folder = directory / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    folder.mkdir(parents=True, exist_ok=True)
    for path in paths:
        target, n = folder / path.name, 1
        while target.exists():
            target, n = folder / f"{path.name}.{n}", n + 1
        os.replace(path, target)
    return folder


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
