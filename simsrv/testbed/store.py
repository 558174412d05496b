"""A campaign's store: what it writes, with checksums, and the one reader of what it holds.

``simsrv testbed --campaign ... --out DIR`` keeps:

* ``runs/LABEL/``: one measured condition (``summary.json``, ``frames.parquet``,
  ``clients.parquet``, ``sends.parquet``, QuakeTM's ``threads.parquet``) and, written last,
  ``manifest.json``: the condition's every field and each file's sha256 and size.  A run
  is written into ``runs/.LABEL.partial/`` and renamed into place once its manifest is
  written, so ``runs/LABEL`` is always whole.  A condition whose server crashed leaves
  ``runs/LABEL/error.txt`` (tried again when the campaign resumes).
* ``runs.parquet`` (one row per run) and ``capacity.json`` (the capacity searches), then,
  written last, ``manifest.json``: their sha256 and size.
* ``damaged/``: a stored run that resuming found damaged (a file that no longer matches its
  checksum, a summary that does not read, a ``runs/LABEL`` that is a file, or one holding
  another condition) is moved there, with one line in ``damaged/reasons.txt``, and measured
  again: nothing stored is deleted.

Every stored file is read through this module (:func:`read_runs`, :func:`read_capacity`,
:func:`run_file`, :func:`read_run_table`, :func:`read_summary`, :func:`read_sends`,
:func:`read_table`): its checksum checked where a manifest covers it, its columns and values
validated, and any problem one :class:`InputError` line naming the file and the field.  A
store written before the manifests existed is read the same way, without the checksums.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import shutil
from collections.abc import Callable, Iterable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, ValidationError, field_validator

from simsrv.core.errors import InputError, shown
from simsrv.core.strict_model import StrictModel, first_error_line
from simsrv.testbed.run import TestbedConfig
from simsrv.testbed.schema import (
    CORE_FIELDS,
    QUAKETM_FIELDS,
    ROLES,
    CapacityFile,
    StoredCondition,
    condition_of_fields,
)

MANIFEST = "manifest.json"
RUN_FORMAT = "simsrv-testbed-run/1"
STORE_FORMAT = "simsrv-testbed-store/1"
DAMAGED = "damaged"
MAX_JSON_BYTES = 16 << 20
"""The largest ``summary.json``, ``capacity.json`` or manifest read (a summary is ~5 kB)."""
MAX_TABLE_BYTES = 4 << 30
"""The largest Parquet table read (a 256-client frame table of an hour is ~1 GB)."""
MAX_RUNS = 100_000
"""The most rows a ``runs.parquet`` holds."""

MVDSV_MEASURED = (
    "frames_per_s", "messages_per_frame", "messages_per_s", "replies_per_s",
    "server_cpu_utilization", "reply_ratio", "cpu_share.world", "cpu_share.net_recv",
    "cpu_share.request", "cpu_share.reply", "cpu_share.net_send", "cpu_share.frame",
)  # fmt: skip
"""The measured columns every mvdsv row of ``runs.parquet`` has (the comparison's and the
calibration's quantities)."""
QUAKETM_MEASURED = (
    "frame_compute_ms.mean", "request.wall_ms_per_frame", "messages_per_frame",
    "replies_per_s", "request.lock_wait_share", "request.wake_share", "request.idle_end_share",
)  # fmt: skip
"""...and every QuakeTM row."""
SHARES = (0.0, 1.0)
RATES = (0.0, 1e7)
MEASURED_BOUNDS: dict[str, tuple[float, float]] = {
    "frames_per_s": RATES,
    "messages_per_frame": RATES,
    "messages_per_s": RATES,
    "replies_per_s": RATES,
    "server_cpu_utilization": (0.0, 1024.0),
    "reply_ratio": (0.0, 10.0),
    "frame_compute_ms.mean": (0.0, 1e6),
    "request.wall_ms_per_frame": (0.0, 1e6),
    "burst_width_ms": (0.0, 1e6),
    "send_lateness_ms": (0.0, 1e6),
    "socket_buffer_packets": (1.0, 1e7),
    "client_window_cpu_share": (0.0, 1024.0),
    "edicts_per_reply": (0.0, 1e5),
    "quota_share": (0.0, 1e6),
}
"""Each measured column read, in its plausible range (a share in [0, 1]: the columns whose
name has ``share`` in it); a value outside, or infinite, is refused (NaN is a run that did
not measure it)."""


class Damaged(Exception):
    """A stored run that cannot be trusted: ``reason`` says why (one line)."""


class FileDigest(StrictModel):
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    bytes: int = Field(ge=0)


class RunManifest(StrictModel):
    """``runs/LABEL/manifest.json``: the condition measured and each file's checksum."""

    format: Literal[RUN_FORMAT]  # type: ignore[valid-type]
    condition: dict[str, Any]
    files: dict[str, FileDigest] = Field(min_length=1)

    @field_validator("files")
    @classmethod
    def _plain_names(cls, files: dict[str, FileDigest]) -> dict[str, FileDigest]:
        for name in files:
            if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", name) or name == MANIFEST:
                raise ValueError(f"a file of the run's own folder, got {shown(name)}")
        return files


class StoreManifest(StrictModel):
    """``DIR/manifest.json``: the checksums of ``runs.parquet`` and ``capacity.json``."""

    format: Literal[STORE_FORMAT]  # type: ignore[valid-type]
    files: dict[str, FileDigest] = Field(min_length=1)


# -- writing ------------------------------------------------------------------------------


def digest(path: Path) -> FileDigest:
    """The sha256 and size of ``path``."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as stream:
        while chunk := stream.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return FileDigest(sha256=h.hexdigest(), bytes=size)


def write_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """``write(tmp)`` then rename ``tmp`` to ``path``: a reader sees the old file or the
    whole new one, never a part."""
    tmp = path.with_name(f".{path.name}.partial")
    try:
        write(tmp)
        with open(tmp, "rb") as stream:
            os.fsync(stream.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def write_json(path: Path, data: Any) -> None:
    """``data`` as indented JSON in ``path``, atomically."""
    text = json.dumps(data, indent=2) + "\n"
    write_atomically(path, lambda tmp: tmp.write_text(text))


def _manifest_of(directory: Path, names: Iterable[str]) -> dict[str, dict]:
    return {name: digest(directory / name).model_dump() for name in sorted(names)}


def write_run(directory: Path, result: Any) -> None:
    """Store a measured run (``result.write(folder)`` writes its files) as ``directory``:
    written into ``.LABEL.partial`` beside it, its manifest last, then renamed into place
    (``directory`` must not exist: :func:`resume_run` moved anything there aside)."""
    staging = directory.with_name(f".{directory.name}.partial")
    if staging.exists() or staging.is_symlink():
        _remove(staging)
    result.write(staging)
    files = [p.name for p in staging.iterdir() if p.is_file() and p.name != MANIFEST]
    manifest = {
        "format": RUN_FORMAT,
        "condition": _condition_dict(result.config),
        "files": _manifest_of(staging, files),
    }
    write_json(staging / MANIFEST, manifest)
    os.rename(staging, directory)


def write_failure(directory: Path, error: BaseException) -> None:
    """``directory/error.txt``: why a condition was not measured (tried again on resume)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "error.txt").write_text(f"{error}\n")


def write_store(out: Path, table: pd.DataFrame, capacity: dict | None) -> None:
    """A campaign's gathered files: ``capacity.json`` (when given), ``runs.parquet``, and,
    last, ``manifest.json`` with their checksums (and an earlier ``capacity.json``'s)."""
    if capacity is not None:
        write_json(out / "capacity.json", capacity)
    write_atomically(out / "runs.parquet", lambda tmp: table.to_parquet(tmp, index=False))
    names = [n for n in ("runs.parquet", "capacity.json") if (out / n).is_file()]
    write_json(out / MANIFEST, {"format": STORE_FORMAT, "files": _manifest_of(out, names)})


def _condition_dict(config: TestbedConfig) -> dict[str, Any]:
    return asdict(config)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


# -- resuming -----------------------------------------------------------------------------


def resume_run(out: Path, config: TestbedConfig, log: Callable[[str], None]) -> dict | None:
    """The stored summary of ``config`` in the campaign store ``out``, or None when it must be
    measured: nothing stored, a failed attempt (its ``error.txt`` removed), or a stored run
    found damaged, which is moved to ``out/damaged/`` with one line in ``log``."""
    directory = out / "runs" / config.label
    if not (directory.exists() or directory.is_symlink()):
        return None
    if directory.is_dir() and {p.name for p in directory.iterdir()} <= {"error.txt"}:
        shutil.rmtree(directory)  # a failed attempt: nothing measured in it
        return None
    try:
        return stored_summary(directory, config)
    except Damaged as damaged:
        moved = set_aside(out, directory, str(damaged))
        log(
            f"damaged   {config.label}: {damaged}; moved to {moved.relative_to(out)}, "
            "measuring it again"
        )
        return None


def set_aside(out: Path, path: Path, reason: str) -> Path:
    """Move ``path`` to ``out/damaged/NAME`` (``NAME.2``... when taken) and note ``reason`` in
    ``out/damaged/reasons.txt``; one :class:`InputError` line when it cannot be moved."""
    aside = out / DAMAGED
    try:
        aside.mkdir(exist_ok=True)
        target, n = aside / path.name, 1
        while target.exists() or target.is_symlink():
            n += 1
            target = aside / f"{path.name}.{n}"
        os.rename(path, target)
        with open(aside / "reasons.txt", "a") as notes:
            notes.write(f"{target.name}: {reason}\n")
    except OSError as error:
        raise InputError(
            f"testbed --out: cannot move the damaged {path} aside into {aside}: {error.strerror}"
        ) from None
    return target


def stored_summary(directory: Path, config: TestbedConfig) -> dict:
    """The summary of the run stored in ``directory``, checked: every file against the
    manifest (a store without manifests: the summary and the tables' footers read), the
    condition it holds against ``config``; else :class:`Damaged`."""
    if not directory.is_dir() or directory.is_symlink():
        raise Damaged(f"runs/{directory.name} is not a directory")
    manifest_path = directory / MANIFEST
    if manifest_path.is_file():
        manifest = _run_manifest(manifest_path)
        try:
            held = condition_of_fields(manifest.condition, "condition", StoredCondition)
        except InputError as error:
            raise Damaged(f"{MANIFEST}: {error}") from None
        _same_condition(held, config, MANIFEST)
        if "summary.json" not in manifest.files:
            raise Damaged(f"{MANIFEST} lists no summary.json")
        for name, expected in manifest.files.items():
            _check_digest(directory / name, expected)
    else:
        if not (directory / "summary.json").is_file():
            raise Damaged("no summary.json")
        for table in sorted(directory.glob("*.parquet")):
            _footer(table)
    try:
        summary = _summary(directory / "summary.json")
    except InputError as error:
        raise Damaged(str(error).removeprefix(f"{directory}/")) from None
    _same_condition(summary["config"], config, "summary.json")
    return summary_for_table(summary)


def _same_condition(held: TestbedConfig, config: TestbedConfig, where: str) -> None:
    if held != config:
        differ = [
            f"{name} {getattr(held, name)!r}, not {getattr(config, name)!r}"
            for name in TestbedConfig.__dataclass_fields__
            if getattr(held, name) != getattr(config, name)
        ]
        raise Damaged(f"{where} holds another condition ({'; '.join(differ)})")


def _run_manifest(path: Path) -> RunManifest:
    try:
        return RunManifest.model_validate(_json(path))
    except InputError as error:
        raise Damaged(str(error)) from None
    except ValidationError as error:
        raise Damaged(f"{MANIFEST}: {first_error_line(error, RunManifest, '')}") from None


def _check_digest(path: Path, expected: FileDigest) -> None:
    if not path.is_file():
        raise Damaged(f"{path.name} is missing")
    try:
        got = digest(path)
    except OSError as error:
        raise Damaged(f"{path.name} cannot be read ({error.strerror})") from None
    if got != expected:
        raise Damaged(f"{path.name} does not match its checksum in {MANIFEST}")


def _footer(path: Path) -> None:
    import pyarrow.parquet as pq

    try:
        pq.read_metadata(path)
    except Exception as error:  # any unreadable table: the run is damaged
        raise Damaged(f"{path.name} is not a readable Parquet table ({_short(error)})") from None


# -- reading ------------------------------------------------------------------------------


def _short(error: BaseException) -> str:
    return shown(str(error) or type(error).__name__, limit=160, render=str)


def _json(path: Path) -> Any:
    """The JSON value of ``path``, or one :class:`InputError` line naming it."""
    try:
        size = path.stat().st_size
        if size > MAX_JSON_BYTES:
            raise InputError(f"{path}: {size:,} bytes, more than a stored JSON file holds")
        return json.loads(path.read_bytes())
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror})") from None
    except (ValueError, RecursionError) as error:
        raise InputError(f"{path}: not valid JSON ({_short(error)})") from None


def _store_manifest(store: Path) -> StoreManifest | None:
    path = store / MANIFEST
    if not path.is_file():
        return None  # a store written before the manifests
    try:
        return StoreManifest.model_validate(_json(path))
    except ValidationError as error:
        raise InputError(f"{path}: {first_error_line(error, StoreManifest, '')}") from None


def _verified(path: Path, manifest: StoreManifest | RunManifest | None, again: str) -> Path:
    """``path`` when it matches its checksum in ``manifest`` (or no manifest covers it)."""
    if manifest is None or path.name not in manifest.files:
        if manifest is not None and isinstance(manifest, StoreManifest):
            raise InputError(f"{path}: not listed in {path.parent / MANIFEST}; {again}")
        return path
    try:
        _check_digest(path, manifest.files[path.name])
    except Damaged as damaged:
        raise InputError(f"{path.parent}/{damaged} (damaged); {again}") from None
    return path


def _again(store: Path) -> str:
    return (
        f"resume the campaign (simsrv testbed --campaign FILE --out {store}) to measure "
        "the damaged runs again and rewrite it"
    )


def read_table(path: Path, columns: Iterable[str] | None = None) -> pd.DataFrame:
    """A Parquet table (only ``columns`` when given), or one :class:`InputError` line naming
    the file and, for a missing column, the column."""
    import pyarrow.parquet as pq

    if not path.is_file():
        raise InputError(f"{path}: no such file")
    size = path.stat().st_size
    if size > MAX_TABLE_BYTES:
        raise InputError(f"{path}: {size:,} bytes, more than a stored table holds")
    wanted = None if columns is None else list(dict.fromkeys(columns))
    try:
        schema = pq.read_schema(path)
        if wanted is not None:
            missing = [c for c in wanted if c not in schema.names]
            if missing:
                raise InputError(f"{path}: column {missing[0]} is missing")
        return pq.read_table(path, columns=wanted).to_pandas()
    except InputError:
        raise
    except Exception as error:  # any unreadable table is one line
        raise InputError(f"{path}: not a readable Parquet table ({_short(error)})") from None


def _names(path: Path) -> list[str]:
    """The column names of the Parquet table ``path`` (one line when it does not read)."""
    import pyarrow.parquet as pq

    try:
        return list(pq.read_schema(path).names)
    except Exception as error:  # any unreadable table is one line
        raise InputError(f"{path}: not a readable Parquet table ({_short(error)})") from None


def _python(value: Any) -> Any:
    """A table cell as the value a TOML or JSON file would hold: NaN and None as None,
    numpy numbers as Python's, a float that is a whole number as an int (Parquet stores an
    integer column with gaps as floats)."""
    if value is None:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
    return value


FLOAT_FIELDS = ("rate_hz", "duration_s", "warmup_s", "frame_s")


def row_condition(row: dict, where: str) -> TestbedConfig:
    """The condition of a ``runs.parquet`` row (its ``config.*`` columns), validated."""
    values = {
        key.removeprefix("config."): _python(value)
        for key, value in row.items()
        if key.startswith("config.")
    }
    for name in FLOAT_FIELDS:  # 10.0 stored is a float, not the whole number 10
        if isinstance(values.get(name), int) and not isinstance(values[name], bool):
            values[name] = float(values[name])
    try:
        return condition_of_fields(values, where, StoredCondition)
    except InputError as error:
        raise InputError(str(error).replace(f"{where}.", f"{where}: config.", 1)) from None


def condition_of(label: str) -> str:
    """A run's condition: its label without the seed (``dm1-n8-77hz-independent``)."""
    return re.sub(r"-s\d+$", "", label)


def read_runs(store: Path, what: str) -> pd.DataFrame:
    """A campaign's ``runs.parquet``, validated (one :class:`InputError` line naming the file,
    the row and the column): checked against the store's manifest; ``label``, ``role``,
    ``question`` and every ``config.*`` column present (QuakeTM's all or none: a campaign
    stored before QuakeTM gets mvdsv's values); each row's condition valid, its label its
    condition's, once; one server family (mvdsv, or QuakeTM's builds); the measured columns
    the comparison and the calibration read present, numeric, finite and plausible
    (:data:`MEASURED_BOUNDS`; NaN where a run did not measure one).  ``what`` names the
    command in the message when there is no table."""
    path = store / "runs.parquet"
    if not path.is_file():
        raise InputError(
            f"{what}: no runs.parquet in {store} (measure a campaign first: simsrv testbed "
            "--campaign standard --out DIR)"
        )
    _verified(path, _store_manifest(store), _again(store))
    table = read_table(path)
    if table.empty:
        raise InputError(f"{path}: no runs")
    if len(table) > MAX_RUNS:
        raise InputError(f"{path}: {len(table):,} rows, more than a campaign holds")
    for column in ("label", "role", "question", *(f"config.{c}" for c in CORE_FIELDS)):
        if column not in table:
            raise InputError(f"{path}: column {column} is missing")
    quaketm = [f"config.{c}" for c in QUAKETM_FIELDS]
    present = [c for c in quaketm if c in table]
    if present and len(present) < len(quaketm):
        absent = next(c for c in quaketm if c not in table)
        raise InputError(f"{path}: column {absent} is missing (it has {present[0]})")
    if not present:  # stored before QuakeTM: mvdsv's values
        default = TestbedConfig()
        table = table.assign(**{f"config.{c}": getattr(default, c) for c in QUAKETM_FIELDS})
    seen: dict[str, int] = {}
    repeated: list[int] = []
    conditions: dict[str, list[tuple[int, TestbedConfig]]] = {}
    servers = set()
    for i, row in enumerate(table.to_dict("records")):
        label = row["label"]
        where = f"{path}: row {i}"
        if not isinstance(label, str) or not label:
            raise InputError(f"{where}: label must be a text, got {shown(_python(label))}")
        where = f"{path}: row {i} ({shown(label, render=str)})"
        config = row_condition(row, where)
        if label not in (config.label, legacy_label(config)):
            raise InputError(
                f"{where}: label does not match its config.* columns (they describe {config.label})"
            )
        conditions.setdefault(condition_of(label), []).append((i, config))
        if label in seen:
            first = table.iloc[seen[label]].drop(["role", "question"])
            if not first.equals(table.iloc[i].drop(["role", "question"])):
                raise InputError(f"{where}: the label of row {seen[label]}, other values")
            repeated.append(i)  # a run a capacity search reused (stored before gathering
            continue  # dropped the second row)
        seen[label] = i
        if row["role"] not in ROLES:
            raise InputError(
                f"{where}: role must be one of {', '.join(ROLES)}, got {shown(row['role'])}"
            )
        if not isinstance(row["question"], str):
            raise InputError(f"{where}: question must be a text, got {shown(row['question'])}")
        servers.add("mvdsv" if config.quaketm is None else "quaketm")
    for name, members in conditions.items():
        _one_condition(path, name, members)
    if repeated:
        table = table.drop(index=table.index[repeated]).reset_index(drop=True)
    if len(servers) > 1:
        raise InputError(
            f"{path}: mixes mvdsv's and QuakeTM's runs; compare them from separate stores"
        )
    measured = MVDSV_MEASURED if servers == {"mvdsv"} else QUAKETM_MEASURED
    for column in measured:
        if column not in table:
            raise InputError(f"{path}: column {column} is missing")
    for column in (*measured, *MEASURED_BOUNDS):
        if column in table:
            if table[column].dtype == object and table[column].isna().all():
                table[column] = table[column].astype(float)  # every run's None: not measured
            _check_measured(table, column, path)
    return table


def legacy_label(config: TestbedConfig) -> str:
    """The label a campaign gave ``config`` before labels named every field (without its
    duration, warm-up, port, CPUs, load generator and quota period): a store written then
    keeps it, and is read under it."""
    quota = "" if config.quota_us is None else f"-q{config.quota_us}"
    server = ""
    if config.quaketm is not None:
        cpu = "all" if config.server_cpu is None else str(config.server_cpu)
        wait = "" if config.omp_wait == "passive" else f"-{config.omp_wait}"
        wait += "-bind" if config.bind else ""
        server = f"{config.server}-t{config.threads}-f{config.frame_s * 1e3:g}ms-cpu{cpu}{wait}-"
    return (
        f"{server}{config.map}-n{config.clients}-{config.rate_hz:g}hz-{config.phases}{quota}"
        f"-s{config.seed}"
    )


def _one_condition(path: Path, name: str, members: list[tuple[int, TestbedConfig]]) -> None:
    """The runs pooled as repeats of the condition ``name`` (their label without the seed)
    differ in their seed alone: one line when a store written before labels named every
    field holds two conditions under one name."""
    first_row, first = members[0]
    for row, config in members[1:]:
        if replace(config, seed=first.seed) != first:
            differ = next(
                f for f in TestbedConfig.__dataclass_fields__
                if f != "seed" and getattr(config, f) != getattr(first, f)
            )  # fmt: skip
            raise InputError(
                f"{path}: rows {first_row} and {row} are both {name} but differ in {differ} "
                f"({getattr(first, differ)!r}, {getattr(config, differ)!r}): a store written "
                "before labels named every field; measure them again into a new --out"
            )


def _check_measured(table: pd.DataFrame, column: str, path: Path) -> None:
    values = table[column]
    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        raise InputError(f"{path}: column {column} must hold numbers, got {values.dtype}")
    numbers = values.to_numpy(dtype=float)
    low, high = MEASURED_BOUNDS.get(column, SHARES if "share" in column else RATES)
    bad = ~np.isnan(numbers) & ~((numbers >= low) & (numbers <= high))
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(
            f"{path}: row {i} ({table['label'].iloc[i]}): {column} must be in "
            f"[{low:g}, {high:g}] (or missing), got {numbers[i]!r}"
        )


def read_capacity(store: Path) -> dict | None:
    """A campaign's ``capacity.json`` validated (:class:`~simsrv.testbed.schema.CapacityFile`;
    each search's base a full stored condition), or None when the campaign has none."""
    path = store / "capacity.json"
    if not path.is_file():
        return None
    manifest = _store_manifest(store)
    if manifest is not None and path.name in manifest.files:
        _verified(path, manifest, _again(store))
    data = _json(path)
    if not isinstance(data, dict):
        raise InputError(f"{path}: must be a JSON object of searches, got {shown(data)}")
    try:
        searches = CapacityFile.model_validate(data)
    except ValidationError as error:
        raise InputError(f"{path}: {first_error_line(error, CapacityFile, '')}") from None
    out = []
    for entry in searches.searches:
        search = entry.model_dump()
        search["base"] = entry.base.config()
        out.append(search)
    return {"searches": out}


def _run_manifest_of(store: Path, label: str) -> RunManifest | None:
    path = store / "runs" / label / MANIFEST
    if not path.is_file():
        return None
    try:
        return _run_manifest(path)
    except Damaged as damaged:
        raise InputError(f"{path}: {damaged} (damaged); {_again(store)}") from None


def run_file(store: Path, label: str, name: str) -> Path:
    """``store/runs/LABEL/NAME`` checked against its run's manifest (a run stored before the
    manifests: as it is), or one :class:`InputError` line."""
    path = store / "runs" / label / name
    if not path.is_file():
        raise InputError(f"{path}: no such file (the run's {name})")
    return _verified(path, _run_manifest_of(store, label), _again(store))


def read_run_table(
    store: Path,
    label: str,
    name: str,
    columns: dict[str, str],
    optional: dict[str, str] | None = None,
) -> pd.DataFrame:
    """A run's table ``name`` (checked: :func:`run_file`) with ``columns`` (name -> ``bool``,
    ``int`` or ``float``), and those of ``optional`` it has, each present, of its kind and
    finite (a count >= 0; a time may be a little below 0: the patch derives some stages by
    subtracting clock reads), or one :class:`InputError` line naming the file and the
    column."""
    path = run_file(store, label, name)
    columns = {**columns, **{c: k for c, k in (optional or {}).items() if c in _names(path)}}
    table = read_table(path, columns)
    for column, kind in columns.items():
        values = table[column]
        if kind == "bool":
            if not pd.api.types.is_bool_dtype(values):
                raise InputError(
                    f"{path}: column {column} must hold true/false, got {values.dtype}"
                )
            continue
        if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            raise InputError(f"{path}: column {column} must hold numbers, got {values.dtype}")
        if kind == "int" and not pd.api.types.is_integer_dtype(values):
            raise InputError(f"{path}: column {column} must hold whole numbers, got {values.dtype}")
        numbers = values.to_numpy(dtype=float)
        bad = ~np.isfinite(numbers) | ((numbers < 0) if kind == "int" else False)
        if bad.any():
            i = int(np.argmax(bad))
            what = "whole numbers >= 0" if kind == "int" else "finite numbers"
            raise InputError(
                f"{path}: column {column} must hold {what}, got {numbers[i]!r} in row {i}"
            )
    return table


def read_summary(store: Path, label: str) -> dict:
    """A stored run's ``summary.json`` (checked: :func:`run_file`), validated: a JSON object
    whose ``config`` is a full condition (returned as a :class:`TestbedConfig`) and whose
    ``machine``, when present, maps names to texts."""
    return _summary(run_file(store, label, "summary.json"))


def _summary(path: Path) -> dict:
    summary = _json(path)
    if not isinstance(summary, dict):
        raise InputError(f"{path}: must be a JSON object, got {shown(summary)}")
    summary = dict(summary)
    summary["config"] = condition_of_fields(
        summary.get("config"), f"{path}: config", StoredCondition
    )
    label = summary.get("label")
    if label not in (summary["config"].label, legacy_label(summary["config"])):
        raise InputError(
            f"{path}: label {shown(label)} does not match its config (which describes "
            f"{summary['config'].label})"
        )
    machine = summary.get("machine")
    if machine is not None and not (
        isinstance(machine, dict) and all(isinstance(v, str) for v in machine.values())
    ):
        raise InputError(f"{path}: machine must map names to texts, got {shown(machine)}")
    ratio = summary.get("reply_ratio")
    if ratio is not None and (isinstance(ratio, bool) or not isinstance(ratio, int | float)):
        raise InputError(f"{path}: reply_ratio must be a number, got {shown(ratio)}")
    return summary


MACHINE_KEYS = ("cpu_model", "cpus", "kernel", "clocksource")
"""What a run's summary says of the machine it was measured on."""


def read_machine(store: Path, label: str) -> dict[str, str]:
    """The machine a stored run was measured on (its summary's ``machine``: every one of
    :data:`MACHINE_KEYS`), or one :class:`InputError` line."""
    machine = read_summary(store, label).get("machine")
    if not machine or any(key not in machine for key in MACHINE_KEYS):
        path = store / "runs" / label / "summary.json"
        raise InputError(
            f"{path}: machine must name {', '.join(MACHINE_KEYS)} (where the run was measured)"
        )
    return machine


def summary_for_table(summary: dict) -> dict:
    """A stored summary as ``runs.parquet``'s row takes it (its config as a plain dict)."""
    return {**summary, "config": _condition_dict(summary["config"])}


def read_sends(store: Path, label: str, config: TestbedConfig) -> np.ndarray:
    """A stored run's send times (``sent_s``, s), its ``sends.parquet`` validated as the
    model's replay reads it (:func:`simsrv.workload.send_times.load_send_times`)."""
    path = run_file(store, label, "sends.parquet")
    check_sends(path, config)
    return read_table(path, ["sent_s"])["sent_s"].to_numpy(dtype=float)


def check_sends(path: Path, config: TestbedConfig) -> None:
    """One :class:`InputError` line when ``path`` is no replayable ``sends.parquet`` of
    ``config`` (its clients, its rate)."""
    from simsrv.workload.send_times import load_send_times

    load_send_times(str(path), config.clients, config.rate_hz)
