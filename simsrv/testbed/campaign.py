"""A measurement campaign: many testbed conditions, stored as they finish, resumable.

A campaign is a list of :class:`Condition` (a :class:`TestbedConfig`, its role in the
validation: ``calibration`` or ``prediction``, and the question it belongs to) plus,
optionally, a capacity search.  :func:`run_campaign` measures each condition not yet stored
under ``OUT/runs/LABEL/`` (``summary.json``, ``frames.parquet``, ``clients.parquet``,
``sends.parquet`` and their checksums: :mod:`simsrv.testbed.store`), so an interrupted
campaign resumes where it stopped and nothing measured is lost; a stored run found damaged
is moved to ``OUT/damaged/`` and measured again; a condition whose server crashes is
recorded in ``OUT/runs/LABEL/error.txt`` and skipped.  The label names every field of the
condition (:attr:`TestbedConfig.label`).  The gathered table is ``OUT/runs.parquet`` (one
row per condition, the summary flattened with dots).

:data:`STANDARD` is the campaign behind docs/testbed.md, measured in three passes (seeds 1, 2,
3: each pass a repeat of every condition, so a condition's spread is over passes minutes
apart): calibration on dm1 with 8, 16 and 128 clients in independent phases and 16 clients in
step (:data:`CALIBRATION_CLIENTS`, :data:`CALIBRATION_BURST`); predictions for the other
client counts up to 256, the other phase patterns, the other maps, a slower and a faster
client rate, CPU-quota-saturated runs; and two capacity searches per pass, under a 5 % CPU
quota and without a quota at 125 Hz (the rate at which this machine's server saturates
within the protocol's 256 players).
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import pandas as pd
from pydantic import ValidationError

from simsrv.core.errors import InputError
from simsrv.core.strict_model import first_error_line
from simsrv.testbed.run import MAX_CLIENTS as MAX_SEARCH_CLIENTS
from simsrv.testbed.run import TestbedConfig, run_testbed
from simsrv.testbed.schema import CampaignFile, CampaignRow
from simsrv.testbed.store import condition_of, resume_run, write_failure, write_run, write_store

MIN_REPLY_RATIO = 0.95  # the capacity rule simsrv capacity uses
CAPACITY_QUOTA_US, CAPACITY_PERIOD_US = 1000, 20_000  # 5 % of one CPU
SATURATING_RATE_HZ = 125.0
"""The client rate of the standard campaign's saturation series and capacity search without a
quota: at 77 Hz this machine's server answers 256 clients (the protocol's limit) at 96 % of
a CPU, so saturation needs a faster rate."""
SEEDS = (1, 2, 3)
"""The standard campaign's passes (every condition measured once per seed)."""


@dataclass(frozen=True)
class Condition:
    """One measured condition and what it is for."""

    config: TestbedConfig
    role: str = "prediction"
    question: str = ""


@dataclass(frozen=True)
class CapacitySearch:
    """Find the most clients a quota-limited server answers at >= ``min_reply_ratio``."""

    base: TestbedConfig
    clients: tuple[int, ...]
    min_reply_ratio: float = MIN_REPLY_RATIO

    @property
    def name(self) -> str:
        """The search without its seed: repeats of one search share it."""
        quota = "no-quota" if self.base.quota_us is None else f"q{self.base.quota_us}"
        return f"{self.base.map}-{self.base.rate_hz:g}hz-{self.base.phases}-{quota}"


@dataclass(frozen=True)
class Campaign:
    conditions: tuple[Condition, ...]
    capacity: tuple[CapacitySearch, ...] = ()


def standard_campaign(duration_s: float = 10.0, seeds: tuple[int, ...] = SEEDS) -> Campaign:
    """The campaign of docs/testbed.md: one pass of :func:`standard_pass` per seed."""
    conditions: list[Condition] = []
    searches: list[CapacitySearch] = []
    for seed in seeds:
        one = standard_pass(duration_s, seed)
        conditions += one.conditions
        searches += one.capacity
    return Campaign(tuple(conditions), tuple(searches))


CALIBRATION_CLIENTS = (8, 16, 128)
"""The standard campaign's calibration conditions in independent phases on dm1 at 77 Hz: two
small client counts (a frame per packet, after idleness) and a crowd (frames back to back,
replies listing many entities), so that the fit sees the per-packet costs warm and the cost
per listed entity over a wide range."""
CALIBRATION_BURST = ("step", 16)
"""The standard campaign's burst calibration condition: 16 clients sending in step, one frame
of 16 packets after each idle spell, so that the fit can tell a frame's cold start from the
cost per packet."""


def standard_pass(duration_s: float = 10.0, seed: int = 1) -> Campaign:
    """One pass of the standard campaign (28 conditions and two capacity searches)."""
    base = TestbedConfig(
        duration_s=duration_s, seed=seed, map="dm1", rate_hz=77.0, phases="independent"
    )
    out: list[Condition] = []
    for n in (4, 8, 16, 24, 32, 64, 128, 192, 256):
        role = "calibration" if n in CALIBRATION_CLIENTS else "prediction"
        out.append(Condition(replace(base, clients=n), role, "clients"))
    for n in (128, 192, 224, 256):
        fast = replace(base, clients=n, rate_hz=SATURATING_RATE_HZ)
        out.append(Condition(fast, "prediction", "saturation"))
    for phases, counts in (("step", (8, 16, 32)), ("hosts:4", (8, 16, 32))):
        for n in counts:
            role = "calibration" if (phases, n) == CALIBRATION_BURST else "prediction"
            out.append(Condition(replace(base, clients=n, phases=phases), role, "phases"))
    for map_name in ("dm2", "dm3", "dm4", "dm5", "dm6"):
        out.append(Condition(replace(base, clients=16, map=map_name), "prediction", "maps"))
    out.append(Condition(replace(base, clients=32, rate_hz=31.25), "prediction", "rate"))
    for n, quota in ((16, 2000), (32, 2000), (32, 1000)):
        out.append(
            Condition(
                replace(base, clients=n, quota_us=quota, period_us=CAPACITY_PERIOD_US),
                "prediction",
                "quota",
            )
        )
    under_quota = CapacitySearch(
        replace(base, quota_us=CAPACITY_QUOTA_US, period_us=CAPACITY_PERIOD_US),
        tuple(range(4, 33, 4)),
    )
    without_quota = CapacitySearch(
        replace(base, rate_hz=SATURATING_RATE_HZ), tuple(range(168, MAX_SEARCH_CLIENTS + 1, 8))
    )
    return Campaign(tuple(out), (under_quota, without_quota))


STANDARD = "standard"


MAX_CAMPAIGN_FILE_BYTES = 4 << 20
"""The largest campaign file read (10,000 ``[[run]]`` tables are ~2 MB)."""


def load_campaign(source: str | Path, duration_s: float | None = None) -> Campaign:
    """``standard``, ``quaketm`` or a TOML file of ``[[run]]`` tables (the fields of
    :class:`~simsrv.testbed.schema.CampaignRow`: a :class:`TestbedConfig`'s, ``role`` and
    ``question``), every row validated before anything runs: one :class:`InputError` line
    naming the file, the row and the field; two rows of one condition (one label) are
    refused."""
    if str(source) == STANDARD:
        return standard_campaign(duration_s or 10.0)
    if str(source) == "quaketm":
        from simsrv.testbed.quaketm_campaign import quaketm_campaign

        return quaketm_campaign(duration_s or 6.0)
    path = Path(source)
    if not path.is_file():
        raise InputError(
            f"testbed --campaign: {STANDARD!r}, 'quaketm' or a TOML file, got {str(source)!r}"
        )
    try:
        if path.stat().st_size > MAX_CAMPAIGN_FILE_BYTES:
            raise InputError(
                f"testbed --campaign {path}: larger than {MAX_CAMPAIGN_FILE_BYTES:,} bytes"
            )
        data = tomllib.loads(path.read_text())
    except OSError as error:
        raise InputError(f"testbed --campaign {path}: cannot be read ({error.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as error:
        raise InputError(f"testbed --campaign {path}: not valid TOML ({error})") from None
    if duration_s is not None:
        for row in data.get("run", []) if isinstance(data.get("run"), list) else []:
            if isinstance(row, dict):
                row["duration_s"] = duration_s
    where = f"testbed --campaign {path}"
    try:
        tables = CampaignFile.model_validate(data).run
    except ValidationError as error:
        raise InputError(f"{where}: {first_error_line(error, CampaignFile, '')}") from None
    conditions: list[Condition] = []
    seen: dict[str, int] = {}
    for i, table in enumerate(tables):
        try:
            row = CampaignRow.model_validate(table)
        except ValidationError as error:
            raise InputError(
                f"{where}: {first_error_line(error, CampaignRow, f'run.{i}')}"
            ) from None
        try:
            config = row.config().checked()
        except InputError as error:
            raise InputError(f"{where}: run.{i}: {error}") from None
        if config.label in seen:
            raise InputError(
                f"testbed --campaign {path}: run.{i} is the condition of run.{seen[config.label]} "
                f"({config.label}); each condition is measured once a campaign (repeats: "
                "another seed)"
            )
        seen[config.label] = i
        conditions.append(Condition(config, row.role, row.question))
    return Campaign(tuple(conditions))


def measure(
    condition: Condition, out: Path, shared_root: Path | None, log: Callable[[str], None]
) -> dict | None:
    """The stored or newly measured summary of one condition (None if its server crashed).
    A stored run is checked first (:func:`simsrv.testbed.store.resume_run`: a damaged one is
    moved aside and measured again); a new one is stored whole, with its checksums
    (:func:`simsrv.testbed.store.write_run`)."""
    config = condition.config
    directory = out / "runs" / config.label
    summary = resume_run(out, config, log)
    if summary is None:
        log(f"measuring {config.label} ({condition.role})")
        try:
            result = run_testbed(config, shared_root=shared_root)
        except RuntimeError as error:
            write_failure(directory, error)
            log(f"  failed: {error}")
            return None
        write_run(directory, result)
        summary = result.summary
    else:
        log(f"stored    {config.label}")
    return {**summary, "role": condition.role, "question": condition.question}


def run_capacity(
    search: CapacitySearch, out: Path, shared_root: Path | None, log: Callable[[str], None]
) -> tuple[int, list[dict]]:
    """Clients ascending until the reply ratio falls below the rule; (capacity, rows)."""
    rows, capacity = [], 0
    for n in search.clients:
        summary = measure(
            Condition(replace(search.base, clients=n), "prediction", "capacity"),
            out,
            shared_root,
            log,
        )
        if summary is None:
            break
        rows.append(summary)
        if summary["reply_ratio"] < search.min_reply_ratio:
            break
        capacity = n
    return capacity, rows


def gather(rows: list[dict]) -> pd.DataFrame:
    """One flat row per measured run (nested summary keys joined with dots).  A run that a
    capacity search reuses from a pass (same label: the same stored measurement) is one row,
    the pass's, so that pooling counts each measurement once."""
    table = pd.json_normalize(rows, sep=".")
    if "label" in table:
        table = table.drop_duplicates("label", keep="first").reset_index(drop=True)
    return table.drop(
        columns=[c for c in table.columns if c.startswith("machine.")] + ["kind"], errors="ignore"
    )


def run_campaign(
    campaign: Campaign,
    out: Path,
    *,
    shared_root: Path | None = None,
    log: Callable[[str], None] = print,
) -> pd.DataFrame:
    """Measure every condition (resuming), then the capacity search; write ``runs.parquet``
    and ``capacity.json`` with their checksums (:func:`simsrv.testbed.store.write_store`)."""
    out.mkdir(parents=True, exist_ok=True)
    runs = out / "runs"
    if runs.is_symlink() or (runs.exists() and not runs.is_dir()):
        raise InputError(
            f"testbed --out: {runs} is not a directory (a campaign keeps its runs there)"
        )
    runs.mkdir(exist_ok=True)
    rows = [
        row for c in campaign.conditions if (row := measure(c, out, shared_root, log)) is not None
    ]
    capacity_rows: list[dict] = []
    results = []
    for search in campaign.capacity:
        capacity, tried = run_capacity(search, out, shared_root, log)
        capacity_rows += tried
        results.append(
            {
                "name": search.name,
                "seed": search.base.seed,
                "capacity_clients": capacity,
                "min_reply_ratio": search.min_reply_ratio,
                "base": asdict(search.base),
                "clients_grid": list(search.clients),
                "clients_tried": [r["config"]["clients"] for r in tried],
            }
        )
        log(f"capacity {search.name} (seed {search.base.seed}): {capacity} clients")
    table = gather(rows + capacity_rows)
    write_store(out, table, {"searches": results} if results else None)
    return table


def pool_repeats(table: pd.DataFrame) -> pd.DataFrame:
    """One row per condition of a campaign table (``runs.parquet``): each measured number the
    mean of the condition's repeats (its seeds), ``spread.COLUMN`` half their range (the
    repeats lie within mean +- spread when they are two; in general it is the half-width of
    the band that holds them), ``repeats`` how many, ``condition`` the label without the
    seed; the rest (configuration, role) from the first repeat, whose ``label`` it keeps."""
    if table.empty:
        return table.assign(condition=[], repeats=[])
    key = table["label"].map(condition_of)
    numeric = [
        c
        for c in table.columns
        if pd.api.types.is_numeric_dtype(table[c])
        and not pd.api.types.is_bool_dtype(table[c])
        and not c.startswith("config.")
    ]
    groups = table.groupby(key, sort=False)
    pooled = groups.first()
    pooled[numeric] = groups[numeric].mean()
    spread = (groups[numeric].max() - groups[numeric].min()) / 2.0
    pooled = pd.concat([pooled, spread.add_prefix("spread.")], axis=1)
    pooled["repeats"] = groups.size()
    pooled.index.name = "condition"
    return pooled.reset_index()
