"""The sweep store's compaction: each run read once, column types kept, crash safety at every
step of a compaction, failed runs replaced, and ``done`` answered without reading files."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from simsrv.pipeline import result as result_module
from simsrv.sweep import store as store_module
from simsrv.sweep.records import VOLATILE, metrics_row, scenario_hash
from simsrv.sweep.spec import Sweep, SweepRun, load_sweep
from simsrv.sweep.store import SweepStore
from simsrv.sweep.sweep import pending, run_sweep
from tests.test_sweep_file import SWEEP  # the same small sweep: 2 x 2 points x 2 seeds


class Crash(BaseException):
    """Stands for ``kill -9``: nothing after it runs, not even ``except Exception``."""


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Sweep:
    path = tmp_path_factory.mktemp("sweep") / "sweep.toml"
    path.write_text(SWEEP)
    return load_sweep(path)


def _row(run: SweepRun, error: str | None = None, version: int = 0) -> dict:
    """A synthetic row of ``run`` (a real row's columns and types; no simulation)."""
    row = {**run.columns(), **metrics_row(run.scenario, None, error)}
    if error is None:
        row.update(frames=100 + run.seed_index, frames_per_s=10.0 * run.seed + version)
        row.update(wall_time_s=0.5)
    return row


def _files(store: SweepStore) -> tuple[list[Path], list[Path]]:
    """(part files, run files)."""
    return (
        sorted(store.runs_dir.glob("part-*.parquet")),
        sorted(store.runs_dir.glob("run-*.parquet")),
    )


def _rows_in_files(store: SweepStore) -> int:
    return sum(pq.ParquetFile(p).metadata.num_rows for p in store.runs_dir.glob("*.parquet"))


def _one_file_per_run(rows: list[dict], tmp_path: Path) -> pd.DataFrame:
    """The table the store gave before compaction existed: one file per row, concatenated."""
    frames = []
    for i, row in enumerate(rows):
        path = tmp_path / f"row-{i}.parquet"
        pd.DataFrame([row]).to_parquet(path, index=False)
        frames.append(pd.read_parquet(path))
    return pd.concat(frames, ignore_index=True)


def test_compaction_merges_run_files_and_every_reader_sees_each_run_once(sweep, tmp_path):
    store = SweepStore(tmp_path / "out", compact_every=5)
    runs = sweep.runs
    for run in runs[:3]:
        store.write(_row(run), run)
    assert _files(store) == ([], [store.path(r) for r in sorted(runs[:3], key=store.run_hash)])
    store.compact()  # as at the end of a sweep: a part smaller than compact_every
    assert [len(pd.read_parquet(p)) for p in _files(store)[0]] == [3]
    for run in runs[3:]:
        store.write(_row(run), run)  # the fifth run file triggers a compaction
    parts, loose = _files(store)
    assert [len(pd.read_parquet(p)) for p in parts] == [8] and loose == []
    raw = pd.read_parquet(store.runs_dir)
    assert sorted(raw["scenario_hash"]) == sorted(store.run_hash(r) for r in runs)
    assert len(SweepStore(store.out).read()) == len(runs)
    table = SweepStore(store.out).table(sweep)
    assert table["seed"].tolist() == [r.seed for r in runs]  # the sweep's order
    pd.testing.assert_frame_equal(table, _one_file_per_run([_row(r) for r in runs], tmp_path))


@pytest.mark.parametrize("compact_every", [0, 1, 3, 100])
def test_the_table_has_the_types_of_one_file_per_run(sweep, tmp_path, compact_every):
    runs = sweep.runs
    rows = [_row(r, "RuntimeError: boom" if i in (2, 5) else None) for i, r in enumerate(runs)]
    store = SweepStore(tmp_path / "out", compact_every=compact_every)
    for row, run in zip(rows, runs, strict=True):
        store.write(row, run)
    expected = _one_file_per_run(rows, tmp_path)
    pd.testing.assert_frame_equal(store.table(sweep), expected)
    store.compact()
    pd.testing.assert_frame_equal(SweepStore(store.out).table(sweep), expected)
    # only successful runs asked for: `frames` stays an integer, as with one file per run
    ok = Sweep(sweep.path, sweep.base, sweep.varied, runs[:2], None)
    assert SweepStore(store.out).table(ok)["frames"].dtype == "int64"


def _store_to_compact(out: Path, sweep: Sweep) -> tuple[SweepStore, dict[str, dict]]:
    """A store with parts (one holding a failed row) and run files (the failed run's new row,
    two new runs) waiting for a compaction; and the newest row of every run, by hash."""
    runs = sweep.runs
    store = SweepStore(out, compact_every=0)
    newest = {}
    for i, run in enumerate(runs[:6]):
        row = _row(run, "RuntimeError: boom" if i == 2 else None)
        store.write(row, run)
        newest[store.run_hash(run)] = row
    store.compact()
    for run in (runs[2], runs[6], runs[7]):
        row = _row(run, version=1)
        store.write(row, run)
        newest[store.run_hash(run)] = row
    return store, newest


def _check_store(store: SweepStore, sweep: Sweep, newest: dict[str, dict]) -> None:
    """A fresh store (a new process) reads each run once, with its newest row."""
    fresh = SweepStore(store.out)
    rows = fresh.read()
    assert sorted(rows["scenario_hash"]) == sorted(newest)
    for _, row in rows.iterrows():
        expected = newest[row["scenario_hash"]]
        assert pd.isna(row["error"]) == (expected["error"] is None)
        assert row["frames_per_s"] == expected["frames_per_s"]
    assert pending(sweep, fresh) == []


def test_a_crash_at_any_step_of_a_compaction_loses_and_duplicates_nothing(
    sweep, tmp_path, monkeypatch
):
    """Crash before each rename and each deletion a compaction makes (and after the last)."""
    steps = []
    real_replace, real_delete = store_module._replace, store_module._delete

    def counting(real):
        def step(*args):
            steps.append(args)
            return real(*args)

        return step

    store, _ = _store_to_compact(tmp_path / "count", sweep)
    monkeypatch.setattr(store_module, "_replace", counting(real_replace))
    monkeypatch.setattr(store_module, "_delete", counting(real_delete))
    store.compact()
    total = len(steps)
    assert total >= 5  # parts written, a stale part and the run files deleted

    for crash_at in range(total + 1):
        monkeypatch.setattr(store_module, "_replace", real_replace)
        monkeypatch.setattr(store_module, "_delete", real_delete)
        store, newest = _store_to_compact(tmp_path / f"crash-{crash_at}", sweep)
        done: list = []

        def crashing(real, done=done, crash_at=crash_at):
            def step(*args):
                if len(done) == crash_at:
                    raise Crash
                done.append(args)
                return real(*args)

            return step

        monkeypatch.setattr(store_module, "_replace", crashing(real_replace))
        monkeypatch.setattr(store_module, "_delete", crashing(real_delete))
        if crash_at < total:
            with pytest.raises(Crash):
                store.compact()
        else:
            store.compact()
        monkeypatch.setattr(store_module, "_replace", real_replace)
        monkeypatch.setattr(store_module, "_delete", real_delete)
        _check_store(store, sweep, newest)
        # the next compaction (a resumed sweep's) leaves each run in exactly one file
        resumed = SweepStore(store.out)
        resumed.compact()
        _check_store(resumed, sweep, newest)
        assert _files(resumed)[1] == []
        assert _rows_in_files(resumed) == len(newest)
        raw = pd.read_parquet(resumed.runs_dir)  # every row succeeded: one schema
        assert sorted(raw["scenario_hash"]) == sorted(newest)


@pytest.fixture(scope="module")
def uninterrupted(sweep, tmp_path_factory) -> pd.DataFrame:
    store = SweepStore(tmp_path_factory.mktemp("whole"))
    run_sweep(sweep, store)
    return store.table(sweep).drop(columns=list(VOLATILE))


def test_a_sweep_killed_between_the_merged_file_and_the_deletions_resumes_exactly(
    sweep, tmp_path, monkeypatch, uninterrupted
):
    store = SweepStore(tmp_path / "out", compact_every=3)
    real_replace, dead = store_module._replace, []

    def crash(*args):
        dead.append(True)
        raise Crash

    def replace(*args):  # the process is dead: nothing more reaches the disk
        return crash() if dead else real_replace(*args)

    monkeypatch.setattr(store_module, "_delete", crash)
    monkeypatch.setattr(store_module, "_replace", replace)
    with pytest.raises(Crash):
        run_sweep(sweep, store)
    monkeypatch.undo()
    parts, loose = _files(store)
    assert len(parts) == 1 and len(loose) == 3  # the merged file and the files it merged
    assert _rows_in_files(store) == 6
    resumed = SweepStore(store.out)
    assert len(resumed.read()) == 3
    assert len(pending(sweep, resumed)) == len(sweep.runs) - 3
    ran = run_sweep(sweep, resumed)
    assert len(ran) == len(sweep.runs) - 3
    table = SweepStore(store.out).table(sweep).drop(columns=list(VOLATILE))
    pd.testing.assert_frame_equal(table, uninterrupted)
    assert _files(resumed)[1] == [] and _rows_in_files(resumed) == len(sweep.runs)
    raw = pd.read_parquet(resumed.runs_dir)
    assert raw["scenario_hash"].is_unique and len(raw) == len(sweep.runs)


def test_a_failed_run_runs_again_and_its_new_row_replaces_the_merged_one(
    sweep, tmp_path, monkeypatch, uninterrupted
):
    real_simulate = result_module.simulate
    unlucky = scenario_hash(sweep.runs[5].scenario)

    def flaky(scenario, keep_trace=None, keep_frames=None):
        if scenario_hash(scenario) == unlucky:
            raise ZeroDivisionError("boom")
        return real_simulate(scenario, keep_trace, keep_frames)

    monkeypatch.setattr(result_module, "simulate", flaky)
    store = SweepStore(tmp_path / "out", compact_every=3)
    run_sweep(sweep, store)
    failed = store.table(sweep)
    assert failed["error"].notna().tolist() == [i == 5 for i in range(len(sweep.runs))]
    assert _files(store)[1] == []  # the failed row is in a part
    monkeypatch.undo()
    resumed = SweepStore(store.out, compact_every=3)
    assert pending(sweep, resumed) == [sweep.runs[5]]
    assert run_sweep(sweep, resumed) == [sweep.runs[5]]
    table = SweepStore(store.out).table(sweep).drop(columns=list(VOLATILE))
    pd.testing.assert_frame_equal(table, uninterrupted)
    assert _files(resumed)[1] == [] and _rows_in_files(resumed) == len(sweep.runs)
    raw = pd.read_parquet(resumed.runs_dir)
    assert raw["scenario_hash"].is_unique and raw["error"].isna().all()


def test_done_reads_only_the_hash_and_error_columns_once(sweep, tmp_path, monkeypatch):
    store = SweepStore(tmp_path / "out", compact_every=3)
    for i, run in enumerate(sweep.runs[:7]):
        store.write(_row(run, "RuntimeError: boom" if i == 1 else None), run)
    columns = []
    real_read = pq.ParquetFile.read

    def spy(self, *args, **kwargs):
        columns.append(kwargs.get("columns", args[0] if args else None))
        return real_read(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read", spy)
    fresh = SweepStore(store.out)
    expected = [r for i, r in enumerate(sweep.runs) if i == 1 or i >= 7]
    assert pending(sweep, fresh) == expected
    assert columns and all(c and set(c) <= {"scenario_hash", "error"} for c in columns)
    columns.clear()
    assert pending(sweep, fresh) == expected
    assert columns == []  # the index is kept: no file read again


def test_a_row_of_another_run_is_refused(sweep, tmp_path):
    store = SweepStore(tmp_path / "out")
    with pytest.raises(ValueError, match="scenario_hash"):
        store.write(_row(sweep.runs[0]), sweep.runs[1])


def test_a_reader_scans_again_when_a_compaction_merges_files_under_it(sweep, tmp_path, monkeypatch):
    writer = SweepStore(tmp_path / "out", compact_every=0)
    for run in sweep.runs[:4]:
        writer.write(_row(run), run)
    real_read = store_module.read_frame
    calls = []

    def read_during_a_compaction(path, *args, **kwargs):
        if not calls:
            writer.compact()  # after the reader listed the run files, before it reads them
        calls.append(path)
        return real_read(path, *args, **kwargs)

    monkeypatch.setattr(store_module, "read_frame", read_during_a_compaction)
    rows = SweepStore(writer.out).table(sweep)
    assert rows["seed"].tolist() == [r.seed for r in sweep.runs[:4]]
    assert any(Path(p).name.startswith("part-") for p in calls)


def test_the_documented_string_directory_reads_like_a_path(sweep, tmp_path, monkeypatch):
    """Failure 9 (issue 26): docs/cli.md's ``SweepStore("DIR").read()`` raised TypeError."""
    store = SweepStore(tmp_path / "out")
    for run in sweep.runs[:2]:
        store.write(_row(run), run)
    monkeypatch.chdir(tmp_path)
    from_text = SweepStore("out")
    assert from_text.runs_dir == Path("out") / "runs"
    pd.testing.assert_frame_equal(from_text.read(), SweepStore(tmp_path / "out").read())
    assert len(from_text.read()) == 2


def _truncate(path: Path) -> None:
    """What the issue's repro does: ``truncate -s -7``."""
    path.write_bytes(path.read_bytes()[:-7])


def _empty(path: Path) -> None:
    """A file renamed into place before its bytes reached the disk (power loss)."""
    path.write_bytes(b"")


def _flip_a_value(path: Path) -> None:
    """One bit of a ``frames_per_s`` value: plain pandas reads another number."""
    metadata = pq.ParquetFile(path).metadata
    names = [metadata.schema.column(i).name for i in range(metadata.num_columns)]
    chunk = metadata.row_group(0).column(names.index("frames_per_s"))
    data = bytearray(path.read_bytes())
    data[chunk.data_page_offset + chunk.total_compressed_size - 2] ^= 0x01
    path.write_bytes(bytes(data))


def _rename_a_column(path: Path) -> None:
    """One byte of a column's name in the footer: plain pandas reads ``frames_per_t``."""
    data = path.read_bytes()
    footer = len(data) - pq.ParquetFile(path).metadata.serialized_size - 8
    at = data.index(b"frames_per_s", footer) + len("frames_per_")
    path.write_bytes(data[:at] + b"t" + data[at + 1 :])


DAMAGE = {f.__name__.strip("_"): f for f in (_truncate, _empty, _flip_a_value, _rename_a_column)}


def _damaged_store(out: Path, sweep: Sweep, target: str, damage: str):
    """A store with parts and run files (:func:`_store_to_compact`) and one file damaged:
    the part of the successful runs 0, 1, 3, 4, 5, or run 6's run file.  Returns the store's
    newest rows, the damaged file, its bytes and the runs whose only row it held."""
    store, newest = _store_to_compact(out, sweep)
    if target == "part":
        path = max(_files(store)[0], key=lambda p: pq.ParquetFile(p).metadata.num_rows)
        held = [sweep.runs[i] for i in (0, 1, 3, 4, 5)]
    else:
        path, held = store.path(sweep.runs[6]), [sweep.runs[6]]
    DAMAGE[damage](path)
    return newest, path, path.read_bytes(), held


@pytest.mark.parametrize("target", ["part", "run file"])
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_file_is_moved_aside_and_only_its_runs_run_again(sweep, tmp_path, damage, target):
    """Failure 16 (issue 42): a truncated part or run file made every later resume exit 1
    with a pyarrow traceback.  It is found (a read failure, a page checksum, the schema
    fingerprint), moved to OUT/damaged/<time>/ as it was, said in one line, and only its
    runs are pending; every other run keeps its newest row."""
    newest, path, damaged_bytes, held = _damaged_store(tmp_path / "out", sweep, target, damage)
    lines: list[str] = []
    store = SweepStore(tmp_path / "out", warn=lines.append)
    assert [d.path for d in store.verify()] == [path]
    assert len(lines) == 1 and "\n" not in lines[0]
    assert f"{path.name} (" in lines[0] and "moved to" in lines[0]
    [moved] = (tmp_path / "out" / "damaged").glob(f"*/{path.name}")
    assert moved.read_bytes() == damaged_bytes and not path.exists()
    assert pending(sweep, store) == held
    kept = {h: row for h, row in newest.items() if h not in {store.run_hash(r) for r in held}}
    rows = SweepStore(store.out, warn=lines.append).read()
    assert sorted(rows["scenario_hash"]) == sorted(kept)
    for _, row in rows.iterrows():
        assert row["frames_per_s"] == kept[row["scenario_hash"]]["frames_per_s"]
    assert len(lines) == 1  # nothing else to say
    for run in held:
        store.write(_row(run), run)
    store.compact()
    assert pending(sweep, SweepStore(store.out)) == []


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_the_index_alone_finds_a_damaged_file(sweep, tmp_path, damage):
    """Without :meth:`SweepStore.verify` (a Python caller of ``pending`` and ``run_sweep``),
    building the index finds any damage (each file's checksum) and moves the file aside the
    same way."""
    _, path, _, held = _damaged_store(tmp_path / "out", sweep, "part", damage)
    lines: list[str] = []
    assert pending(sweep, SweepStore(tmp_path / "out", warn=lines.append)) == held
    assert len(lines) == 1 and "moved to" in lines[0] and not path.exists()


def test_a_compaction_that_meets_a_damaged_file_sets_it_aside_and_goes_on(sweep, tmp_path):
    """A file damaged after the index was built (the index reads each file once) is found
    when a compaction reads it: moved aside, the compaction done without it."""
    _store_to_compact(tmp_path / "out", sweep)
    lines: list[str] = []
    store = SweepStore(tmp_path / "out", warn=lines.append)
    assert pending(sweep, store) == []
    path, held = store.path(sweep.runs[6]), [sweep.runs[6]]
    _flip_a_value(path)
    store.compact()
    assert len(lines) == 1 and path.name in lines[0] and not path.exists()
    assert pending(sweep, store) == held
    assert _files(store)[1] == [] and pending(sweep, SweepStore(store.out)) == held
    assert _rows_in_files(store) == len(sweep.runs) - 1


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_readers_skip_a_damaged_file_with_one_line_and_move_nothing(sweep, tmp_path, damage):
    """``read`` and ``table`` (the summary) keep every intact row and name the damaged file;
    only a writer moves it."""
    newest, path, damaged_bytes, held = _damaged_store(tmp_path / "out", sweep, "part", damage)
    lines: list[str] = []
    reader = SweepStore(tmp_path / "out", warn=lines.append)
    rows = reader.read()
    lost = {reader.run_hash(r) for r in held}
    assert sorted(rows["scenario_hash"]) == sorted(set(newest) - lost)
    assert len(lines) == 1 and f"{path.name} (" in lines[0] and "skipped" in lines[0]
    assert len(reader.table(sweep)) == len(sweep.runs) - len(held)
    assert path.read_bytes() == damaged_bytes
