"""The sweep store never loses or silently corrupts a result: any changed byte of a run or part
file is found by the checksum in its name, moved aside and its runs run again; entries that are
not regular files are never opened; a store whose ``runs`` or ``damaged`` is not a directory is
a one-line error; a store written before names carried checksums still reads."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from simsrv.cli.main import main
from simsrv.core.errors import InputError
from simsrv.sweep import store as store_module
from simsrv.sweep.parquet_files import checksum, write_table
from simsrv.sweep.spec import Sweep, load_sweep
from simsrv.sweep.store import SweepStore
from simsrv.sweep.sweep import pending, run_sweep
from tests.test_sweep_file import SWEEP, _rows
from tests.test_sweep_store import _row, _store_to_compact

ROOT = Path(__file__).resolve().parents[1]
A_CHECKSUM = "0123456789abcdef" * 2


class Crash(BaseException):
    """Stands for ``kill -9``: nothing after it runs, not even ``except Exception``."""


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Sweep:
    path = tmp_path_factory.mktemp("sweep") / "sweep.toml"
    path.write_text(SWEEP)
    return load_sweep(path)


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> tuple[Path, Path, pd.DataFrame]:
    """The small sweep (8 runs) run to its end by ``simsrv sweep``: the sweep file, its output
    directory (one part) and its rows without the volatile columns."""
    tmp = tmp_path_factory.mktemp("finished")
    path = tmp / "sweep.toml"
    path.write_text(SWEEP)
    out = tmp / "out"
    assert main(["sweep", str(path), "--out", str(out), "--workers", "2"]) == 0
    return path, out, _rows(SweepStore(out).table(load_sweep(path)))


def _copy(finished, tmp_path: Path) -> tuple[Path, Path, Sweep]:
    """A copy of the finished sweep's output: (sweep file, output directory, sweep)."""
    path, out, _ = finished
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    return path, copy, load_sweep(path)


def _resume(path: Path, out: Path, capsys) -> tuple[int, list[str]]:
    """``simsrv sweep`` on ``out`` again: its exit status and stderr lines."""
    capsys.readouterr()
    status = main(["sweep", str(path), "--out", str(out), "--workers", "2"])
    return status, capsys.readouterr().err.splitlines()


def _warnings(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("simsrv: warning:")]


def _the_part(out: Path) -> Path:
    [part] = (out / "runs").glob("part-*.parquet")
    return part


def _flip(path: Path, at: int, mask: int = 0x01) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= mask
    path.write_bytes(bytes(data))


def _footer_start(path: Path) -> int:
    return path.stat().st_size - pq.ParquetFile(path).metadata.serialized_size - 8


def _flip_a_column_name_in_the_footers_metadata(path: Path) -> None:
    """The byte found by the fuzzing campaign: one letter of ``scenario_hash`` in the
    metadata pandas keeps in the footer.  Page checksums do not cover the footer, and the
    schema fingerprint is checked on a copy of the metadata that this byte leaves alone; the
    run's row merged with it gave a part that every reader then skipped."""
    data = path.read_bytes()
    at = data.index(b'{"name": "scenario_hash"', _footer_start(path)) + len('{"name": "scen')
    _flip(path, at)


def _crashed_with_run_files(sweep: Sweep, out: Path, runs: int, monkeypatch) -> None:
    """A sweep killed after ``runs`` runs were stored, before any compaction: one run file
    each, as ``kill -9`` leaves them."""

    def crash_after(run, row) -> None:
        finished.append(run)
        if len(finished) == runs:
            raise Crash

    finished: list = []
    with monkeypatch.context() as patch:
        patch.setattr(SweepStore, "compact", lambda self: None)  # dead before it compacts
        with pytest.raises(Crash):
            run_sweep(sweep, SweepStore(out), on_done=crash_after)
    assert len(list((out / "runs").glob("run-*.parquet"))) == runs


# --- any damaged byte ----------------------------------------------------------------------


def test_a_flipped_footer_byte_of_a_run_file_is_moved_aside_and_its_run_runs_again(
    finished, tmp_path, capsys, monkeypatch
):
    """The campaign's case: one byte of a crashed sweep's run file, in its footer.  It used to
    pass every check and be merged into a part that every reader skipped, so each resume said
    "6 already stored; running 0" and exited 0 with a run missing, forever."""
    path, _, uninterrupted = finished
    sweep, out = load_sweep(path), tmp_path / "out"
    _crashed_with_run_files(sweep, out, 6, monkeypatch)
    damaged = sorted((out / "runs").glob("run-*.parquet"))[2]
    _flip_a_column_name_in_the_footers_metadata(damaged)
    status, lines = _resume(path, out, capsys)
    assert status == 0 and "Traceback" not in "\n".join(lines)
    [moved] = (out / "damaged").glob(f"*/{damaged.name}")
    assert _warnings(lines) == [
        f"simsrv: warning: damaged store file in {out / 'runs'} moved to {moved.parent}: "
        f"{damaged.name} (its bytes differ from the checksum it was written with); the runs "
        "it held are no longer stored (the sweep runs them again)"
    ]
    assert f"8 runs, 5 already stored in {out}; running 3 on local" in lines
    pd.testing.assert_frame_equal(_rows(SweepStore(out).table(sweep)), uninterrupted)
    status, lines = _resume(path, out, capsys)
    assert status == 0 and _warnings(lines) == []
    assert f"8 runs, 8 already stored in {out}; running 0 on local" in lines


def test_a_flipped_byte_of_the_part_is_moved_aside_and_its_runs_run_again(
    finished, tmp_path, capsys
):
    path, out, sweep = _copy(finished, tmp_path)
    part = _the_part(out)
    _flip(part, _footer_start(part) + 100)
    status, lines = _resume(path, out, capsys)
    assert status == 0 and len(_warnings(lines)) == 1
    assert f"{part.name} (its bytes differ" in lines[0] and "runs them again" in lines[0]
    assert f"8 runs, 0 already stored in {out}; running 8 on local" in lines
    assert list((out / "damaged").glob(f"*/{part.name}"))
    pd.testing.assert_frame_equal(_rows(SweepStore(out).table(sweep)), finished[2])


def _positions(size: int, footer: int) -> list[int]:
    """Bytes to flip: spread over the whole file, every byte of the footer's last 64 and a
    spread over the footer."""
    spread = range(0, size, max(1, size // 40))
    in_footer = range(footer, size, max(1, (size - footer) // 40))
    return sorted({*spread, *in_footer, *range(max(0, size - 64), size)})


@pytest.mark.parametrize("target", ["part", "run file"])
def test_every_flipped_byte_is_found_and_only_its_runs_run_again(sweep, tmp_path, target):
    """Whatever byte changed (pages, footer, schema copies, statistics, offsets, the length
    and magic at the end), the file is moved aside and only its runs are pending."""
    template = tmp_path / "template"
    store, newest = _store_to_compact(template, sweep)
    if target == "part":
        name = max(store.runs_dir.glob("part-*"), key=lambda p: pq.ParquetFile(p).metadata.num_rows)
        held = [sweep.runs[i] for i in (0, 1, 3, 4, 5)]
    else:
        name, held = store.path(sweep.runs[6]), [sweep.runs[6]]
    size, footer = name.stat().st_size, _footer_start(name)
    for at in _positions(size, footer):
        out = tmp_path / f"at-{at}"
        shutil.copytree(template, out)
        _flip(out / "runs" / name.name, at)
        lines: list[str] = []
        damaged = SweepStore(out, warn=lines.append)
        assert pending(sweep, damaged) == held, at  # the index alone finds it
        assert len(lines) == 1 and name.name in lines[0], at
        assert [p.name for p in (out / "damaged").glob("*/*")] == [name.name]
        rows = SweepStore(out, warn=lines.append).read()
        assert len(rows) == len(newest) - len(held) and len(lines) == 1
        shutil.rmtree(out)


def test_a_reader_skips_a_file_whose_bytes_changed_and_a_writer_moves_it(sweep, tmp_path):
    store, newest = _store_to_compact(tmp_path / "out", sweep)
    path = store.path(sweep.runs[6])
    _flip(path, _footer_start(path) + 10)
    lines: list[str] = []
    rows = SweepStore(store.out, warn=lines.append).read()
    assert len(rows) == len(newest) - 1 and path.exists()
    assert len(lines) == 1 and "skipped" in lines[0] and path.name in lines[0]
    assert [d.path for d in SweepStore(store.out, warn=lines.append).verify()] == [path]
    assert not path.exists() and "moved to" in lines[1]


# --- only regular files --------------------------------------------------------------------


def _not_a_file(kind: str, where: Path, tmp_path: Path) -> None:
    """Something other than a regular file at ``where``: a FIFO (opening it to read would
    block until someone writes), a directory, or a link to a FIFO."""
    if kind == "fifo":
        os.mkfifo(where)
    elif kind == "directory":
        where.mkdir()
        (where / "part-000001-00000000.parquet").write_bytes(b"PAR1")
    else:
        os.mkfifo(tmp_path / "elsewhere")
        where.symlink_to(tmp_path / "elsewhere")


def _sweep_command(path: Path, out: Path) -> subprocess.CompletedProcess:
    """``simsrv sweep`` in a subprocess, killed if it takes over two minutes (a hang)."""
    return subprocess.run(
        [sys.executable, "-m", "simsrv", "sweep", str(path), "--out", str(out), "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink"])
@pytest.mark.parametrize(
    "name", [f"part-000009-{A_CHECKSUM}.parquet", "run-0123456789abcdef.parquet"]
)
def test_an_entry_named_like_a_store_file_that_is_not_a_regular_file_is_never_opened(
    finished, tmp_path, kind, name
):
    """A FIFO named like a part hung a resume past Ctrl-C.  Readers skip such an entry with
    one line; a resume moves it to OUT/damaged/ with one line and runs nothing it did not
    have to."""
    path, out, sweep = _copy(finished, tmp_path)
    entry = out / "runs" / name
    _not_a_file(kind, entry, tmp_path)
    reader = subprocess.run(
        [
            sys.executable,
            "-c",
            f"from simsrv.sweep.store import SweepStore as S; print(len(S({str(out)!r}).read()))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert (reader.returncode, reader.stdout) == (0, "8\n"), reader.stderr
    [line] = reader.stderr.splitlines()
    assert f"skipped: {name} (a " in line and "not a regular file" in line
    assert os.path.lexists(entry)
    done = _sweep_command(path, out)
    assert done.returncode == 0, (done.returncode, done.stderr)
    [warning] = _warnings(done.stderr.splitlines())
    assert f": {name} (a " in warning and "not a regular file" in warning and "moved to" in warning
    assert f"8 runs, 8 already stored in {out}; running 0 on local" in done.stderr
    assert not os.path.lexists(entry)
    [moved] = (out / "damaged").glob(f"*/{name}")
    assert moved.is_symlink() if kind == "symlink" else moved.exists()
    pd.testing.assert_frame_equal(_rows(SweepStore(out).table(sweep)), finished[2])


# --- the store's directories, its columns --------------------------------------------------


@pytest.mark.parametrize("directory", ["runs", "damaged"])
def test_runs_or_damaged_as_a_regular_file_is_a_one_line_error(
    finished, tmp_path, capsys, directory
):
    path, out, _ = _copy(finished, tmp_path)
    target = out / directory
    if target.exists():
        shutil.rmtree(target)
    target.write_text("not a directory\n")
    status, lines = _resume(path, out, capsys)
    assert status == 2 and "Traceback" not in "\n".join(lines)
    role = "keeps its run files" if directory == "runs" else "moves damaged files"
    assert lines[-1] == (
        f"simsrv: error: {target} is a regular file, not a directory (the sweep store {role} "
        "there): move it out of the way and run again"
    )
    assert target.read_text() == "not a directory\n"  # nothing touched
    if directory == "runs":
        with pytest.raises(InputError, match=re.escape(f"{target} is a regular file")):
            SweepStore(out).read()


def test_a_regular_file_named_damaged_is_refused_before_anything_moves(sweep, tmp_path):
    store, _ = _store_to_compact(tmp_path / "out", sweep)
    path = store.path(sweep.runs[6])
    _flip(path, 20)
    (store.out / "damaged").write_text("")
    with pytest.raises(InputError, match="damaged is a regular file, not a directory"):
        pending(sweep, SweepStore(store.out))  # the index would move the file there
    assert path.exists()


def _without_the_error_column(part: Path, checksummed: bool) -> Path:
    """``part`` rewritten without its ``error`` column, under a name with its checksum (or
    under a name from before names carried one); the new path."""
    table = pq.read_table(part).drop_columns(["error"])
    part.unlink()
    tmp = part.with_name("tmp.parquet")
    write_table(table, tmp)  # with its own schema fingerprint: a consistent file
    token = checksum(tmp.read_bytes()) if checksummed else "89abcdef"
    path = part.with_name(f"part-000001-{token}.parquet")
    tmp.rename(path)
    return path


@pytest.mark.parametrize("checksummed", [True, False])
def test_a_part_without_its_error_column_is_moved_aside_and_its_runs_run_again(
    finished, tmp_path, capsys, checksummed
):
    path, out, sweep = _copy(finished, tmp_path)
    part = _without_the_error_column(_the_part(out), checksummed)
    lines: list[str] = []
    assert len(SweepStore(out, warn=lines.append).read()) == 0  # readers skip it
    assert len(lines) == 1 and f"{part.name} (it has no 'error' column)" in lines[0]
    status, lines = _resume(path, out, capsys)
    assert status == 0 and "Traceback" not in "\n".join(lines)
    [warning] = _warnings(lines)
    assert f"{part.name} (it has no 'error' column); the runs it held are no longer" in warning
    assert f"8 runs, 0 already stored in {out}; running 8 on local" in lines
    assert list((out / "damaged").glob(f"*/{part.name}"))
    pd.testing.assert_frame_equal(_rows(SweepStore(out).table(sweep)), finished[2])


# --- stores written before names carried checksums ------------------------------------------


def _old_names(runs: Path) -> dict[str, str]:
    """Rename every store file to the name an earlier simsrv gave it (the bytes were the
    same); old name -> new name."""
    renamed = {}
    for path in sorted(runs.iterdir()):
        if match := re.fullmatch(r"run-([0-9a-f]+)-[0-9a-f]{32}\.parquet", path.name):
            old = f"run-{match[1]}.parquet"
        elif match := re.fullmatch(r"part-(\d+)-[0-9a-f]{32}\.parquet", path.name):
            old = f"part-{match[1]}-{os.urandom(4).hex()}.parquet"
        else:
            continue
        path.rename(runs / old)
        renamed[old] = path.name
    return renamed


def test_a_store_from_before_checksums_reads_resumes_and_gets_checksummed_names(sweep, tmp_path):
    store, newest = _store_to_compact(tmp_path / "out", sweep)
    expected = SweepStore(store.out).read()
    renamed = _old_names(store.runs_dir)
    assert len(renamed) == 5  # two parts and three run files
    lines: list[str] = []
    old = SweepStore(store.out, warn=lines.append)
    pd.testing.assert_frame_equal(old.read(), expected)
    assert pending(sweep, old) == []
    assert SweepStore(store.out, warn=lines.append).verify() == [] and lines == []
    assert sorted(p.name for p in store.runs_dir.iterdir()) == sorted(renamed.values())
    pd.testing.assert_frame_equal(SweepStore(store.out).read(), expected)


def test_an_old_run_file_with_the_campaigns_flipped_byte_is_found(sweep, tmp_path):
    """Without a checksum in its name, the metadata pyarrow reads must equal the footer's."""
    store, _ = _store_to_compact(tmp_path / "out", sweep)
    _old_names(store.runs_dir)
    [path] = [p for p in store.runs_dir.glob("run-*") if sweep.runs[6].scenario_hash in p.name]
    _flip_a_column_name_in_the_footers_metadata(path)
    lines: list[str] = []
    assert [d.path for d in SweepStore(store.out, warn=lines.append).verify()] == [path]
    assert pending(sweep, SweepStore(store.out)) == [sweep.runs[6]]


# --- a run written again -------------------------------------------------------------------


def test_a_crash_between_a_run_files_new_row_and_the_deletion_of_its_old_row(
    sweep, tmp_path, monkeypatch
):
    """A failed run that runs again gets a new run file (a new checksum, a new name); the old
    one is deleted after.  Killed in between, both are there: the row without an error wins,
    for readers and for the index, which deletes the other."""
    run = sweep.runs[3]
    store = SweepStore(tmp_path / "out", compact_every=0)
    store.write(_row(run, "RuntimeError: boom"), run)
    failed = store.path(run)
    with monkeypatch.context() as patch:
        patch.setattr(store_module, "_delete", lambda path: None)  # killed before it deletes
        store.write(_row(run, version=1), run)
    ok = store.path(run)
    assert failed.exists() and ok.exists() and failed != ok
    rows = SweepStore(store.out).read()
    assert len(rows) == 1 and rows["error"].isna().all()
    resumed = SweepStore(store.out)
    assert pending(sweep, resumed) == [r for r in sweep.runs if r != run]
    assert not failed.exists() and ok.exists()
    store.write(_row(run, "RuntimeError: again"), run)  # in one process: replaced at once
    assert list(store.runs_dir.glob("run-*")) == [store.path(run)]
