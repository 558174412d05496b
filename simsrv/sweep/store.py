"""A sweep's results on disk: a Parquet dataset under ``OUT/runs/``, one row per run.

Every row has the columns of a sweep row (the varied parameters by dotted name, ``seed_index``,
``seed``, then :func:`simsrv.sweep.records.metrics_row`); a run is identified by its
``scenario_hash`` (the hash of its resolved scenario: every parameter and the seed).

**Reading.**  ``SweepStore(OUT).read()`` returns every stored run once (its newest row), at any
time: after a ``kill -9``, during a sweep (a read that meets a file a running sweep has just
merged away scans again) or after it; ``SweepStore(OUT).table(sweep)`` returns the rows of one
sweep's runs in the sweep's order.  ``pandas.read_parquet(OUT / "runs")`` reads the files as
they are: it sees each run once after a sweep that ended normally or by Ctrl-C, but after a
``kill -9`` during a merge (below) or while a failed run's new row waits for the next merge, a
run can be there twice; and pyarrow takes the column types of the first file it opens, so a
store whose failed rows (``error`` text, NaN ``frames``) and successful rows are in separate
files may not read that way at all.  Use ``read()``.

**Files.**  Every file's name ends in its **checksum**: 32 hex digits of the BLAKE2b (16
bytes) of the file's bytes (:func:`simsrv.sweep.parquet_files.checksum`).  The file is written
whole in memory first, so its name is known before anything reaches the disk, and one rename
makes the file and its checksum appear together: there is no moment at which a file is there
without it, and no second file to keep in step.  A name is never reused for other bytes.

``run-<hash>-<checksum>.parquet`` holds one finished run's row.  It is the write-ahead unit:
written to a hidden temporary name (``.<name>.<pid>.tmp``; pyarrow and pandas skip names that
start with ``.``) and renamed, as soon as the run finishes, so a process killed at any moment
loses at most the runs in flight and leaves only whole files.  A run written again (a failed
run that ran again) gets a new file, and its older run file is deleted after the new one is in
place; a crash in between leaves both, and the row without an error wins (else the larger
name; both are rows of the same run), for readers and for the index, which deletes the other.
Reading one small file per run is what made resuming and summarising slow at 10,000+ runs, so
the store also *compacts*: ``part-<seq>-<checksum>.parquet`` holds many runs' rows (``seq``
increases with every part written; two processes that pick the same ``seq`` write other bytes,
so other names, or the same bytes).  ``compact()`` runs every ``compact_every``
(:data:`COMPACT_EVERY`) new run files and at the end of a sweep
(:func:`simsrv.sweep.sweep.run_sweep`, also when it is interrupted).  It

1. reads the run files, the parts that hold a row a newer file replaced ("stale": a failed run
   that ran again) and the parts smaller than ``compact_every`` rows that can be merged;
2. keeps each run's newest row, groups the rows by their Parquet schema (types included) and
   writes one new part per group (temporary name, ``fsync``, rename, ``fsync`` of the
   directory);
3. only then deletes the files it read.

A crash after 2, before or during 3, leaves some runs' rows in two files.  That is harmless
because every reader applies one precedence rule, "newest wins": a run file beats every part,
a part beats the parts with a smaller ``seq``.  The rule gives the newest row: a part is only
written from rows already on disk, so a run file is newer than any part's row of its run
(or the same row), and a part written in step 2 holds exactly the rows that won among its
inputs, which no file it did not read beats; so the two copies are the same row, and the next
``compact()`` deletes the extra one.  No step ever deletes the only copy of a winning row, so
a crash never loses a stored run; no step rewrites a file in place, so none is ever
half-written where a reader looks.

Why parts keep one schema each: a failed row has ``frames`` NaN (float) where a successful
row has an integer, and ``error`` text where the others have nulls.  Reading files of one
schema each and concatenating them with pandas gives every column the type it had before
compaction existed (one file per run, concatenated): ``frames`` is ``int64`` unless one of the
rows read failed.  Failed rows also end up in their own small parts, so re-running them
rewrites only those.

**Resuming.**  ``done(run)`` answers from an index of the stored runs (hash -> newest file,
whether its row has an ``error``), built once per :class:`SweepStore` from the parts and the
run files (at most ``compact_every`` of them, unless several crashes left more): each file's
bytes checked against its checksum, and only its ``scenario_hash`` and ``error`` columns
decoded; it is kept up to date by
``write`` and ``compact``.  A resumed sweep therefore skips exactly the runs stored without an
error; failed runs run again and their new row replaces the old one.

**Damaged files.**  Whoever opens a store file reads its bytes once, compares them with the
checksum in its name and parses those same bytes, so any changed byte (a flipped bit in a
page, in the footer's metadata or statistics, in the length at the end; a truncation) is found
by every reader, the index included.  The file is also checked as Parquet (page checksums, the
schema fingerprint: :mod:`simsrv.sweep.parquet_files`), it must have the text columns
``scenario_hash`` and ``error``, and a run file must hold the one run its name says.  Only
regular files are opened: an entry named like a store file that is a FIFO (opening it would
wait for a writer), a directory or a symbolic link is never read.  Each of these is handled by
the role of the one that meets it, with one line to ``warn`` (default: stderr):

* the writer (the index, :meth:`SweepStore.compact`, :meth:`SweepStore.verify`, which
  ``simsrv sweep`` calls before it lists the pending runs) moves it as it is to
  ``OUT/damaged/<UTC time>/`` and forgets its rows, so its runs are pending again (or, where
  an older file holds a row of the run, that row wins, by the rule above).  A compaction finds
  what it reads before it writes anything (a file damaged after the index read it);
* readers (:meth:`SweepStore.read`, :meth:`SweepStore.table`: the summary) leave it out and
  move nothing (a reader is not the writer).

Nothing else is lost: the rows of every other file are kept, and the damaged file itself is
kept aside for inspection.  If ``OUT/runs`` or ``OUT/damaged`` is something other than a
directory (a regular file, say), the store raises :class:`~simsrv.core.errors.InputError`
naming it (``simsrv sweep``: one line, exit 2) and touches nothing.

**Stores written before names carried checksums** (``run-<hash>.parquet``,
``part-<seq>-<8 random hex digits>.parquet``) read as before, with one more check: the
metadata of the table read must equal the footer's schema.  :meth:`SweepStore.verify` (each
``simsrv sweep``) also reads such a file as pandas reads it and, when every check passes,
renames it to its checksummed name; compaction rewrites the others' rows into checksummed
parts.  From its first resume on, such a store is checksummed like a new one.  A file damaged
before that, in a way none of those checks sees, cannot be told from an intact one.

The index assumes one writer per ``OUT`` (one sweep at a time; any number of readers).  Two
sweeps writing one ``OUT`` at once are not supported: no file is ever corrupted, but one can
stop with an error when the other merged a file away, or a run can keep an older row.  The
commands that write a store hold a lock on ``OUT`` (:mod:`simsrv.sweep.out_lock`); a Python
caller of :func:`simsrv.sweep.sweep.run_sweep` can take the same lock with ``out_lock.hold``.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd
import pyarrow as pa

from simsrv.core.errors import InputError
from simsrv.sweep.parquet_files import (
    CHECKSUM_DIGITS,
    DAMAGED_DIR,
    DamagedFile,
    check_directory,
    checksum,
    file_bytes,
    fingerprinted,
    frame_of,
    not_regular,
    opened,
    parse_columns,
    read_columns,
    read_frame,
    set_aside,
    table_bytes,
    with_fingerprint,
)
from simsrv.sweep.spec import Sweep, SweepRun

RUNS_DIR = "runs"
COMPACT_EVERY = 1000
"""Run files written between two compactions (also the size below which parts are merged)."""

HASH = "scenario_hash"
ERROR = "error"
_RUN_FILE = re.compile(rf"run-([0-9a-f]+)(?:-([0-9a-f]{{{CHECKSUM_DIGITS}}}))?\.parquet")
_PART_FILE = re.compile(rf"part-(\d+)-([0-9a-f]{{{CHECKSUM_DIGITS}}}|[0-9a-f]{{8}})\.parquet")
"""A part's name ends in its checksum, or (written before names carried one) 8 random hex
digits."""
_RUNS_ROLE = "the sweep store keeps its run files there"
_DAMAGED_ROLE = "the sweep store moves damaged files there"
_READ_ATTEMPTS = 5
"""Scans a reader makes when files vanish under it (a concurrent compaction merged them)."""

T = TypeVar("T")


@dataclass
class _Part:
    """A part file as the index knows it."""

    path: Path
    key: tuple[int, str]
    """(seq, checksum): the newest-wins order of parts."""
    rows: int
    schema: pa.Schema


@dataclass
class _Listing:
    """The store files in ``runs/`` as one scan found them."""

    parts: list[tuple[tuple[int, str], Path]] = field(default_factory=list)
    """In newest-wins order (the newest last)."""
    loose: dict[str, list[Path]] = field(default_factory=dict)
    """Run files, by hash (more than one only after a crash while a run was written again)."""
    odd: list[DamagedFile] = field(default_factory=list)
    """Entries named like store files that are not regular files (never opened)."""


@dataclass
class _Index:
    """The writer's view of the store: for each run, its newest file and whether it failed."""

    parts: dict[Path, _Part] = field(default_factory=dict)
    loose: dict[str, Path] = field(default_factory=dict)
    """Run files, by hash."""
    where: dict[str, Path] = field(default_factory=dict)
    ok: dict[str, bool] = field(default_factory=dict)
    stale: set[Path] = field(default_factory=set)
    """Parts holding a row that a newer file replaced."""
    written: dict[str, pa.Table] = field(default_factory=dict)
    """The table of each run file this store wrote since the last compaction (compaction
    merges the table instead of reading the file back)."""
    next_seq: int = 1

    def put(self, run_hash: str, path: Path, ok: bool) -> None:
        """``path`` holds the newest row of ``run_hash``."""
        previous = self.where.get(run_hash)
        if previous is not None and previous != path and previous in self.parts:
            self.stale.add(previous)
        self.where[run_hash] = path
        self.ok[run_hash] = ok


class SweepStore:
    """The run and part files under ``out / "runs"`` (module docstring)."""

    def __init__(
        self,
        out: str | os.PathLike[str],
        *,
        compact_every: int = COMPACT_EVERY,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        out = Path(out)  # a plain string is fine: SweepStore("results/sweeps/x").read()
        self.out = out
        self.runs_dir = out / RUNS_DIR
        self.compact_every = compact_every
        """Compact after this many new run files (0: only when :meth:`compact` is called)."""
        self.warn = warn if warn is not None else _warn
        """Where the one-line report of a damaged file goes (default: stderr)."""
        self._index: _Index | None = None

    def run_hash(self, run: SweepRun) -> str:
        """The hash that identifies ``run`` (its row's ``scenario_hash``; computed once per
        run, :attr:`SweepRun.scenario_hash`)."""
        return run.scenario_hash

    def path(self, run: SweepRun) -> Path | None:
        """The run file that holds ``run``'s row; None if none does (the run is not stored,
        or a compaction merged its row into a part)."""
        return self._loaded().loose.get(self.run_hash(run))

    def write(self, row: dict[str, Any], run: SweepRun) -> None:
        """Store one finished run's row (atomically), replacing any older row of the run;
        compact when ``compact_every`` run files have accumulated."""
        run_hash = self.run_hash(run)
        if row.get(HASH) != run_hash:
            raise ValueError(f"row's {HASH} {row.get(HASH)!r} is not the run's {run_hash!r}")
        index = self._loaded()
        self._make_runs_dir()
        # what DataFrame.to_parquet(index=False) does, keeping the table for the next compaction
        table = with_fingerprint(pa.Table.from_pandas(pd.DataFrame([row]), preserve_index=False))
        data = table_bytes(table)
        target = self.runs_dir / f"run-{run_hash}-{checksum(data)}.parquet"
        _write_atomically(target, data)
        older = index.loose.get(run_hash)
        if older is not None and older != target:
            _delete(older)  # the run's older row (a failed run that ran again)
        index.loose[run_hash] = target
        index.written[run_hash] = table
        index.put(run_hash, target, ok=_is_missing(row.get(ERROR)))
        if self.compact_every > 0 and len(index.loose) >= self.compact_every:
            self.compact()

    def done(self, run: SweepRun) -> bool:
        """Whether ``run`` is stored without an error (from the index: no file is read)."""
        return self._loaded().ok.get(self.run_hash(run), False)

    def read(self) -> pd.DataFrame:
        """Every stored run once (its newest row): parts in ``seq`` order, then run files."""
        return _retrying(lambda: self._read(None))

    def table(self, sweep: Sweep) -> pd.DataFrame:
        """The stored rows of ``sweep``'s runs, in the sweep's order (point, then seed)."""
        hashes = [self.run_hash(r) for r in sweep.runs]
        rows = _retrying(lambda: self._read(set(hashes)))
        if rows.empty:
            return rows
        position = {h: i for i, h in enumerate(rows[HASH].tolist())}
        order = [position[h] for h in hashes if h in position]
        return rows.iloc[order].reset_index(drop=True)

    def compact(self) -> None:
        """Merge the run files, stale parts and small parts into new parts, then delete them
        (module docstring: a crash at any point leaves a readable, complete store).  A
        damaged input is found before anything is written: it is moved aside
        (:meth:`verify`), the index rebuilt and the compaction started again."""
        while True:
            try:
                return self._compact()
            except _DamagedInputs as damaged:
                self._set_aside(damaged.files)
                self._index = None

    def _compact(self) -> None:
        index = self._loaded()
        groups, loose, consumed = self._inputs(index)
        if not loose and not consumed:
            return
        for run_hash, _ in loose:
            index.written.pop(run_hash, None)
        written = []
        for _, tables in groups:
            table = pa.concat_tables(tables)
            if table.num_rows:
                written.append(self._write_part(index, table))
        _fsync_directory(self.runs_dir)
        for part, hashes in written:
            index.parts[part.path] = part
            for run_hash in hashes:
                index.where[run_hash] = part.path
        for part in consumed:
            _delete(part.path)
            del index.parts[part.path]
            index.stale.discard(part.path)
        for run_hash, path in loose:
            _delete(path)  # its name is its checksum: the bytes merged are the bytes there
            del index.loose[run_hash]

    def _inputs(
        self, index: _Index
    ) -> tuple[list[tuple[pa.Schema, list[pa.Table]]], list[tuple[str, Path]], list[_Part]]:
        """What a compaction merges, read (nothing written, the index unchanged): the rows by
        schema, the run files (hash, path) and the parts it replaces.  Raises
        :class:`_DamagedInputs` naming every damaged file among them."""
        groups: list[tuple[pa.Schema, list[pa.Table]]] = []
        loose: list[tuple[str, Path]] = []
        damaged: list[DamagedFile] = []
        for run_hash, path in sorted(index.loose.items()):
            table = index.written.get(run_hash)
            if table is None:  # a run file this store did not write (e.g. before a crash)
                try:
                    table = _read_run_file(path, run_hash)
                except DamagedFile as error:
                    damaged.append(error)
                    continue
            _add(groups, table)
            loose.append((run_hash, path))
        consumed = [index.parts[p] for p in index.stale]
        for part in consumed:
            try:
                table = _read_part(part.path)
            except DamagedFile as error:
                damaged.append(error)
                continue
            keep = [index.where.get(h) == part.path for h in table.column(HASH).to_pylist()]
            _add(groups, table.filter(pa.array(keep, pa.bool_())))
        small_rows = self.compact_every if self.compact_every > 0 else COMPACT_EVERY
        small = [p for p in index.parts.values() if p.rows < small_rows]
        small = [p for p in small if p.path not in index.stale]
        for part in small:
            siblings = sum(_same(part.schema, other.schema) for other in small)
            if siblings > 1 or any(_same(part.schema, s) for s, _ in groups):
                try:
                    _add(groups, _read_part(part.path))
                except DamagedFile as error:
                    damaged.append(error)
                    continue
                consumed.append(part)
        if damaged:
            raise _DamagedInputs(damaged)
        return groups, loose, consumed

    def verify(self) -> list[DamagedFile]:
        """Read every file of the store whole, checking it (its checksum, and
        :mod:`simsrv.sweep.parquet_files`: page checksums, schema fingerprint; the
        ``scenario_hash`` and ``error`` columns; a run file holding its own run), and move the
        damaged ones (and entries named like store files that are not regular files) aside
        with one warning line; the damaged files found.  Their runs are then not stored: a
        resumed sweep runs them again.  A file written before names carried a checksum is also
        read as pandas reads it and, if intact, renamed to its checksummed name.  What a
        writer (``simsrv sweep``) does before it lists the pending runs.  Raises
        :class:`InputError` if ``runs`` or ``damaged`` is not a directory."""
        listing = self._scan()
        check_directory(self.out / DAMAGED_DIR, _DAMAGED_ROLE)
        damaged = list(listing.odd)
        renamed: list[tuple[Path, Path]] = []
        for (seq, _), path in listing.parts:
            try:
                data = _whole(path)
            except DamagedFile as error:
                damaged.append(error)
                continue
            if _expected(path) is None:
                renamed.append((path, path.with_name(f"part-{seq:06d}-{checksum(data)}.parquet")))
        for run_hash, paths in sorted(listing.loose.items()):
            for path in paths:
                try:
                    data = _whole(path, run_hash)
                except DamagedFile as error:
                    damaged.append(error)
                    continue
                if _expected(path) is None:
                    name = f"run-{run_hash}-{checksum(data)}.parquet"
                    renamed.append((path, path.with_name(name)))
        if damaged:
            self._set_aside(damaged)
        for old, new in renamed:
            _replace(old, new)
        if renamed:
            _fsync_directory(self.runs_dir)
        if damaged or renamed:
            self._index = None
        return damaged

    def _skipped(self, damaged: list[DamagedFile]) -> None:
        """Say (one line) that a read left out damaged files; readers move nothing."""
        files = "; ".join(f"{d.path.name} ({d.reason})" for d in damaged)
        one = len(damaged) == 1
        self.warn(
            f"damaged store file{'' if one else 's'} in {self.runs_dir} skipped: {files}; the "
            f"runs {'it' if one else 'they'} held are missing from what was read (the next "
            f"simsrv sweep on {self.out} moves {'it' if one else 'them'} to "
            f"{self.out / DAMAGED_DIR} and runs them again)"
        )

    def _set_aside(self, damaged: list[DamagedFile]) -> None:
        """Move the damaged files to ``OUT/damaged/<time>/`` and say so (one line)."""
        folder = set_aside([d.path for d in damaged], self.out / DAMAGED_DIR)
        files = "; ".join(f"{d.path.name} ({d.reason})" for d in damaged)
        held = "the runs it held are" if len(damaged) == 1 else "the runs they held are"
        self.warn(
            f"damaged store file{'s' if len(damaged) > 1 else ''} in {self.runs_dir} moved to "
            f"{folder}: {files}; {held} no longer stored (the sweep runs them again)"
        )

    def _write_part(self, index: _Index, table: pa.Table) -> tuple[_Part, list[str]]:
        """Write ``table`` as the next part (durably); the part and the hashes it holds."""
        data = table_bytes(table)
        key = (index.next_seq, checksum(data))
        index.next_seq += 1
        path = self.runs_dir / f"part-{key[0]:06d}-{key[1]}.parquet"
        _write_atomically(path, data, durable=True)
        return _Part(path, key, table.num_rows, table.schema), table.column(HASH).to_pylist()

    def _make_runs_dir(self) -> None:
        """Create ``runs/`` (:class:`InputError` if something else has its name)."""
        check_directory(self.runs_dir, _RUNS_ROLE)
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise InputError(f"{self.runs_dir}: cannot create it: {error.strerror}") from None

    def _loaded(self) -> _Index:
        """The index, built on first use."""
        if self._index is None:
            self._index = _retrying(self._build_index)
        return self._index

    def _build_index(self) -> _Index:
        """The index from the ``scenario_hash`` and ``error`` columns of every file (each
        file's checksum checked); a file that fails to read (or whose footer does not match
        its fingerprint) is moved aside and its runs are not stored."""
        index = _Index()
        listing = self._scan()
        damaged = list(listing.odd)
        for key, path in listing.parts:
            try:
                schema, columns = read_columns(path, [HASH, ERROR], _expected(path))
                _check_columns(path, schema)
            except DamagedFile as error:
                damaged.append(error)
                continue
            index.parts[path] = _Part(path, key, columns.num_rows, fingerprinted(schema))
            index.next_seq = max(index.next_seq, key[0] + 1)
            failed = columns.column(ERROR).is_valid().to_pylist()
            for run_hash, bad in zip(columns.column(HASH).to_pylist(), failed, strict=True):
                index.put(run_hash, path, not bad)
        for run_hash, paths in listing.loose.items():
            found = []
            for path in paths:
                try:
                    found.append((_stored_ok(path, run_hash), path.name, path))
                except DamagedFile as error:
                    damaged.append(error)
            if not found:
                continue
            found.sort()  # the winner last: a row without an error, then the larger name
            *older, (ok, _, path) = found
            for _, _, other in older:  # a crash while the run was written again left these
                _delete(other)
            index.loose[run_hash] = path
            index.put(run_hash, path, ok)
        if damaged:
            self._set_aside(damaged)
        return index

    def _scan(self) -> _Listing:
        """The store files in ``runs/`` (other names ignored); raises :class:`InputError` if
        ``runs`` is not a directory."""
        try:
            entries = list(os.scandir(self.runs_dir))
        except FileNotFoundError:
            check_directory(self.runs_dir, _RUNS_ROLE)  # a dangling link
            return _Listing()
        except NotADirectoryError:
            check_directory(self.runs_dir, _RUNS_ROLE)
            raise
        listing = _Listing()
        for entry in entries:
            run, part = _RUN_FILE.fullmatch(entry.name), _PART_FILE.fullmatch(entry.name)
            if not run and not part:
                continue
            path = self.runs_dir / entry.name
            try:
                if not entry.is_file(follow_symlinks=False):
                    mode = entry.stat(follow_symlinks=False).st_mode
                    listing.odd.append(DamagedFile(path, not_regular(mode)))
                    continue
            except FileNotFoundError:  # merged away since the listing
                continue
            if run:
                listing.loose.setdefault(run[1], []).append(path)
            elif part:
                listing.parts.append(((int(part[1]), part[2]), path))
        listing.parts.sort()
        for paths in listing.loose.values():
            paths.sort()
        return listing

    def _read(self, wanted: set[str] | None) -> pd.DataFrame:
        """Each run's newest row (of the runs in ``wanted``, or every run), each file's rows
        kept with their own types until the final concatenation."""
        listing = self._scan()
        damaged = list(listing.odd)
        frames: list[pd.DataFrame] = []
        for _, path in listing.parts:
            try:
                frames.append(_frame(path))
            except DamagedFile as error:
                damaged.append(error)
        first_run_file = len(frames)
        order = []  # the run files' newest-wins order: a row without an error, then the name
        for run_hash, paths in sorted(listing.loose.items()):
            for path in paths:
                try:
                    frame = _frame(path, run_hash)
                except DamagedFile as error:
                    damaged.append(error)
                    continue
                order.append((bool(frame[ERROR].isna().all()), path.name, len(frames)))
                frames.append(frame)
        if damaged:
            self._skipped(damaged)
        winner: dict[str, int] = {}
        newest_last = list(range(first_run_file)) + [i for _, _, i in sorted(order)]
        for i in newest_last:
            winner.update(dict.fromkeys(frames[i][HASH].tolist(), i))
        kept = []
        for i, frame in enumerate(frames):
            hashes = frame[HASH].tolist()
            keep = [winner[h] == i and (wanted is None or h in wanted) for h in hashes]
            if all(keep):
                kept.append(frame)
            elif any(keep):
                kept.append(frame[keep])
        if not kept:
            return pd.DataFrame()
        return pd.concat(kept, ignore_index=True)


class _DamagedInputs(Exception):
    """Files a compaction would read are damaged (nothing was written yet)."""

    def __init__(self, files: list[DamagedFile]) -> None:
        self.files = files
        super().__init__("; ".join(str(f) for f in files))


def _warn(line: str) -> None:
    """The default report of a damaged file: one line on stderr."""
    sys.stderr.write(f"simsrv: warning: {line}\n")
    sys.stderr.flush()


def _expected(path: Path) -> str | None:
    """The checksum in a store file's name (None: a name from before names carried one)."""
    if match := _RUN_FILE.fullmatch(path.name):
        return match[2]
    if (match := _PART_FILE.fullmatch(path.name)) and len(match[2]) == CHECKSUM_DIGITS:
        return match[2]
    return None


def _check_columns(path: Path, schema: pa.Schema) -> None:
    """Raise :class:`DamagedFile` unless ``schema`` has the text columns every store file
    has: ``scenario_hash`` and ``error`` (null where no row failed)."""
    for name in (HASH, ERROR):
        if name not in schema.names:
            raise DamagedFile(path, f"it has no {name!r} column")
        kind = schema.field(name).type
        if not (_is_text(kind) or (name == ERROR and pa.types.is_null(kind))):
            raise DamagedFile(path, f"its {name!r} column holds {kind}, not text")


def _is_text(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _whole(path: Path, run_hash: str | None = None) -> bytes:
    """Every check of a store file (:meth:`SweepStore.verify`); its bytes.  A file without a
    checksum in its name is also read as the readers read it (pandas)."""
    expected = _expected(path)
    with opened(path, expected) as file:
        schema, table = parse_columns(path, file.data)
        _check_columns(path, schema)
        if run_hash is not None:
            _check_run_file(path, run_hash, table.column(HASH).to_pylist())
        if expected is None and list(frame_of(file).columns) != table.column_names:
            raise DamagedFile(path, "pandas reads other columns than the file's schema has")
        return file.data


def _read_part(path: Path) -> pa.Table:
    """A part's rows, checked, with the fingerprint of their schema (old files too, so that
    rows of one schema merge whatever wrote them)."""
    schema, table = parse_columns(path, file_bytes(path, _expected(path)))
    _check_columns(path, schema)
    return with_fingerprint(table)


def _read_run_file(path: Path, run_hash: str) -> pa.Table:
    """A run file's row, checked: it must hold the run its name says, once."""
    table = _read_part(path)
    _check_run_file(path, run_hash, table.column(HASH).to_pylist())
    return table


def _frame(path: Path, run_hash: str | None = None) -> pd.DataFrame:
    """A store file as the readers read it (pandas), checked; ``run_hash``: a run file's."""
    frame = read_frame(path, _expected(path))
    for name in (HASH, ERROR):
        if name not in frame.columns:
            raise DamagedFile(path, f"it has no {name!r} column")
    if run_hash is not None:
        _check_run_file(path, run_hash, frame[HASH].tolist())
    return frame


def _stored_ok(path: Path, run_hash: str) -> bool:
    """Whether the run file ``path`` holds a row without an error (reads two columns)."""
    schema, columns = read_columns(path, [HASH, ERROR], _expected(path))
    _check_columns(path, schema)
    _check_run_file(path, run_hash, columns.column(HASH).to_pylist())
    error = columns.column(ERROR)
    return error.null_count == len(error)


def _check_run_file(path: Path, run_hash: str, hashes: list[Any]) -> None:
    if hashes != [run_hash]:
        raise DamagedFile(path, f"holds {hashes[:2]!r}, not the one row of run {run_hash}")


def _write_atomically(target: Path, data: bytes, *, durable: bool = False) -> None:
    """Write ``data`` to a hidden temporary file beside ``target`` (``durable``: ``fsync``
    it), then rename it to ``target``."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        if durable:
            handle.flush()
            os.fsync(handle.fileno())
    _replace(tmp, target)


def _replace(source: Path, target: Path) -> None:
    """Rename (atomic); a seam for the crash tests."""
    os.replace(source, target)


def _delete(path: Path) -> None:
    """Delete a file merged into a part; a seam for the crash tests."""
    path.unlink(missing_ok=True)


def _fsync_directory(directory: Path) -> None:
    """Make the renames in ``directory`` durable before anything they replace is deleted."""
    if os.name != "posix":
        return
    handle = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def _add(groups: list[tuple[pa.Schema, list[pa.Table]]], table: pa.Table) -> None:
    """Put ``table`` in the group of its schema (types and metadata); skip it if empty."""
    if table.num_rows == 0:
        return
    for schema, tables in groups:
        if _same(schema, table.schema):
            tables.append(table)
            return
    groups.append((table.schema, [table]))


def _same(a: pa.Schema, b: pa.Schema) -> bool:
    return a.equals(b, check_metadata=True)


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def _retrying(function: Callable[[], T]) -> T:
    """``function()``, scanning again if a file it listed vanished (merged by a writer)."""
    for attempt in range(_READ_ATTEMPTS):
        try:
            return function()
        except FileNotFoundError:
            if attempt == _READ_ATTEMPTS - 1:
                raise
            time.sleep(0.01 * (attempt + 1))
    raise AssertionError("unreachable")
