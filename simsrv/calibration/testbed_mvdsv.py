"""Calibrate a platform to the real server measured on this machine (``this-machine-mvdsv``).

Run with ``simsrv calibrate this-machine-mvdsv --data DIR`` where DIR is a campaign stored by
``simsrv testbed --campaign ... --out DIR`` (docs/testbed.md).  The targets are the
campaign's ``calibration`` conditions (the standard campaign: dm1, 8 and 16 clients,
independent phases, no quota); every other condition stays a prediction
(``simsrv testbed --compare DIR``).

Per calibration condition, nine targets: frames/s, messages/frame and the server's CPU busy
fraction (+-10 %), and the six shares of its CPU time the patched server measures with the
thread CPU clock (world, receive calls, executing packets, building replies, send calls,
per-frame work; +-5 points).  The starting point is the direct estimate: each stage's CPU
time divided by what the model charges it per (frame, world tick, packet, reply), pooled
over the calibration runs; world physics is split into a fixed part and a part per entity
(players + the map's entities) by the two runs' ticks, and reply building into a part per
reply and a part per visible entity by the same two runs.  The joint fit
(:mod:`simsrv.calibration.joint`) then moves six factors, one per stage cost, and reports
what pins each; the per-visible-entity part of a reply stays at its direct estimate
(:data:`SET_FROM_ESTIMATE`).
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from simsrv.calibration.fitting import CALIBRATORS, Calibrator, FitOptions
from simsrv.calibration.joint import (
    BuildFit,
    FitParameter,
    FitReport,
    JointFit,
    Target,
    fit_and_log,
    report_at_start,
)
from simsrv.calibration.platform_file import PlatformFiles, measured_on, write_measured
from simsrv.core.errors import InputError
from simsrv.platforms.profile import PLATFORM_DIR

PLATFORM_NAME = "this-machine-mvdsv"
PLATFORM = PLATFORM_DIR / f"{PLATFORM_NAME}.toml"

PARAMETERS: tuple[FitParameter, ...] = (
    FitParameter(
        "frame_overhead",
        ("frame_overhead",),
        0.1,
        2000.0,
        "per-frame work: the select() wake-up, timeouts, console, statistics",
    ),
    FitParameter(
        "world",
        ("world_base", "world_per_entity"),
        0.01,
        5000.0,
        "SV_Physics per world tick (ratio of its fixed and per-entity parts kept)",
    ),
    FitParameter(
        "net_recv_per_message",
        ("net_recv_per_message",),
        0.05,
        500.0,
        "the recvfrom() system call per packet",
    ),
    FitParameter(
        "request_per_message",
        ("request_per_message",),
        0.1,
        2000.0,
        "executing one packet: parse, SV_RunCmd, pmove, relink",
    ),
    FitParameter(
        "reply_per_client", ("reply_per_client",), 0.05, 2000.0, "building one reply, fixed part"
    ),
    FitParameter(
        "net_send_per_reply",
        ("net_send_per_reply",),
        0.05,
        500.0,
        "the sendto() system call per reply",
    ),
)
"""The fitted factors (bounds on the first key, us)."""

MEASURED = (
    "wakeup_latency_us",
    "wakeup_latency_quantiles_us",
    "cold_start_us",
    "cold_refill_us",
    "cold_decay_us",
    "cold_refill_frame_share",
)
"""Measured on the calibration runs' frames, not fitted (the platform's machine, not the
server's stages).  The wake-up latency: the distribution of the time from the packet that
wakes an idle server to its frame's start (:func:`simsrv.testbed.frames.wakeup_latencies_us`),
as 100 quantiles (``wakeup_latency_us`` is then 0).  The cold start: the frames' CPU time
against the idle time before them (:func:`simsrv.testbed.frames.cold_start_fit`)."""
SET_FROM_ESTIMATE = (
    "reply_per_visible_entity",
    "reply_per_scanned_entity",
    "net_send_wake",
    *MEASURED,
)
"""Written from the direct estimate, not fitted.  The per-entity parts of building a reply,
per entity the model's replies list and per edict of the server's list they scan, are the
slopes of the measured build time per reply against both counts in each calibration
condition (:func:`reply_fit`; a crowd condition among them spreads them); the fit's targets
do not pin them apart from the fixed part, so they are set, not fitted.  The wake-up of
a sleeping receiver: measured on the frames' send calls against the load generator's idle
share (:func:`simsrv.testbed.frames.send_wake_fit`, with the per-reply cost it also gives as
the joint fit's start).  And :data:`MEASURED`."""

RATE_TOLERANCE, SHARE_TOLERANCE = 0.10, 0.05
TARGET_QUANTITIES = (  # (measured column, model quantity, relative?)
    ("frames_per_s", "frames_per_s", True),
    ("messages_per_frame", "messages_per_frame", True),
    ("server_cpu_utilization", "busy_fraction", True),
    ("cpu_share.world", "world_share", False),
    ("cpu_share.net_recv", "net_recv_share", False),
    ("cpu_share.request", "request_share", False),
    ("cpu_share.reply", "reply_share", False),
    ("cpu_share.net_send", "net_send_share", False),
    ("cpu_share.frame", "frame_share", False),
)


FRAME_COLUMNS = {
    "start_s": "float", "wall_us": "float", "measured": "bool", "physics_us": "float",
    "physics_ran": "int", "build_us": "float", "replies": "int", "other_us": "float",
    "select_us": "float", "recv_syscall_us": "float", "execute_us": "float",
    "packets": "int", "connectionless": "int", "send_syscall_us": "float",
}  # fmt: skip
"""The columns of a calibration run's ``frames.parquet`` the estimate reads (and
``edicts``, when the run recorded it)."""


def calibration_runs(data: Path | None) -> pd.DataFrame:
    """The campaign's calibration rows (read by :func:`simsrv.testbed.store.read_runs`), or
    one :class:`InputError` line: no campaign, QuakeTM's, fewer than two calibration
    conditions, or a calibration target not measured (NaN)."""
    from simsrv.testbed.store import read_runs

    if data is None:
        raise InputError(
            "calibrate this-machine-mvdsv needs --data DIR: a campaign measured "
            "by simsrv testbed --campaign standard --out DIR"
        )
    table = read_runs(Path(data), "calibrate --data")
    if table["config.server"].astype(str).str.startswith("quaketm").all():
        raise InputError(
            f"calibrate this-machine-mvdsv --data: {data} holds QuakeTM's runs; calibrate "
            "them with simsrv calibrate this-machine-quaketm"
        )
    runs = table[table["role"] == "calibration"]
    if len(runs) < 2:
        raise InputError(
            f"calibrate --data: {data} has {len(runs)} calibration condition(s); "
            "the fit needs at least 2 (two client counts separate the fixed and "
            "per-entity parts)"
        )
    clients = sorted(set(runs["config.clients"].astype(int)))
    if len(clients) < 2:
        raise _unpinned(
            Path(data),
            "world_base and world_per_entity",
            f"every calibration run has {clients[0]} clients; the line through the runs' "
            "world ticks needs two client counts or more",
        )
    for measured, _, _ in TARGET_QUANTITIES:
        missing = runs[measured].isna().to_numpy()
        if missing.any():
            label = runs["label"].iloc[int(missing.argmax())]
            raise InputError(
                f"calibrate --data: {Path(data) / 'runs.parquet'}: {label}: {measured} was not "
                "measured (NaN); a calibration target must be"
            )
    return runs.reset_index(drop=True)


def _unpinned(data: Path, parameters: str, why: str) -> InputError:
    """The one line refusing a fit whose data cannot pin ``parameters``."""
    return InputError(f"calibrate --data {data}: {parameters} cannot be set: {why}")


def _map_entities(map_file: Path) -> int:
    from simsrv.pipeline.load import load_scenario
    from simsrv.pipeline.seeding import run_streams
    from simsrv.pipeline.simulation import build_map
    from simsrv.testbed.model import SCENARIO

    scenario = load_scenario(str(SCENARIO), [f"map.file={map_file}"])
    return len(build_map(scenario, run_streams(scenario.run)).entities)


def direct_estimate(data: Path, runs: pd.DataFrame) -> dict[str, float]:
    """Each stage's CPU per unit the model charges it by, pooled over the calibration runs
    (us).  World physics is split by a line through the runs' entity counts, reply building
    by a line through their conditions' entities per reply in the model
    (:func:`simsrv.testbed.model.visible_per_reply`)."""
    from simsrv.testbed.build import find_shared
    from simsrv.testbed.campaign import condition_of
    from simsrv.testbed.frames import (
        Unpinned,
        cold_start_fit,
        idle_gaps_us,
        latency_quantiles,
        send_wake_fit,
        wakeup_latencies_us,
        warm_costs,
    )
    from simsrv.testbed.model import config_from_row, receiver_idle_share, visible_per_reply
    from simsrv.testbed.store import read_sends

    shared = find_shared()
    counts_map = bool(tomllib.loads(PLATFORM.read_text()).get("world_counts_map_entities", True))
    frames, wakeups, tables = [], [], []
    visible: dict[str, float] = {}  # the model's entities per reply, by condition
    for _, row in runs.iterrows():
        table = _frames(data, row["label"])
        sent = read_sends(Path(data), row["label"], config_from_row(row.to_dict()))
        wakeups.append(wakeup_latencies_us(table, sent))
        tables.append(table)
        table = table.sort_values("start_s")
        window = table.assign(gap_us=idle_gaps_us(table))[table["measured"]]
        condition = condition_of(row["label"])
        map_entities = _map_entities(shared.map_file(row["config.map"])) if counts_map else 0
        window = window.assign(
            run=row["label"],
            condition=condition,
            entities=int(row["config.clients"]) + map_entities,
        )
        frames.append(window)
        if condition not in visible:  # the repeats of a condition share the model's count
            visible[condition] = visible_per_reply(row.to_dict(), shared)
    allf = pd.concat(frames)

    per_run = allf.groupby("entities").agg(
        physics=("physics_us", "sum"), ticks=("physics_ran", "sum")
    )
    if len(per_run) < 2:
        raise _unpinned(
            data,
            "world_base and world_per_entity",
            f"every calibration run has {int(per_run.index[0])} entities; the line through "
            "the runs' world ticks needs two player counts or more",
        )
    if (per_run["ticks"] == 0).any():
        raise _unpinned(
            data, "world_base and world_per_entity", "a calibration run ran no world tick"
        )
    tick = (per_run["physics"] / per_run["ticks"]).to_numpy()
    entities = per_run.index.to_numpy(dtype=float)
    slope, intercept = np.polyfit(entities, tick, 1)
    if intercept < 0.1:  # the line through the runs meets 0 above 0 entities: a tick's cost
        # is taken as proportional to the entities (the runs pooled), not as that line
        slope, intercept = float(tick @ entities / (entities @ entities)), 0.1
    slope = max(slope, 1e-3)
    if len(set(visible.values())) < 2 or allf.groupby("run")["replies"].sum().min() == 0:
        raise _unpinned(
            data,
            "reply_per_client and reply_per_visible_entity",
            "the build time per reply needs calibration runs with replies in conditions "
            "whose replies list different entity counts",
        )
    rintercept, rslope, rscan = reply_fit(allf, visible)
    idle = [receiver_idle_share(row.to_dict()) for _, row in runs.iterrows()]
    try:
        warm = warm_costs(tables)
        cold = cold_start_fit(tables, warm)
        sends = send_wake_fit(list(zip(tables, idle, strict=True)))
        quantiles = latency_quantiles(np.concatenate(wakeups))
    except Unpinned as error:
        raise _unpinned(data, error.parameters, str(error)) from None
    return {
        "wakeup_latency_us": 0.0,
        "wakeup_latency_quantiles_us": quantiles,
        "cold_start_us": cold["wake_us"],
        "cold_refill_us": cold["refill_us"],
        "cold_decay_us": cold["decay_us"],
        "cold_refill_frame_share": cold["refill_frame_share"],
        "frame_overhead": warm["frame_us"],
        "world_base": float(intercept),
        "world_per_entity": float(slope),
        "net_recv_per_message": warm["recv_us"],
        "request_per_message": warm["execute_us"],
        "reply_per_client": float(rintercept),
        "reply_per_visible_entity": float(rslope),
        "reply_per_scanned_entity": float(rscan),
        "net_send_per_reply": sends["per_reply_us"],
        "net_send_wake": sends["wake_us"],
    }


def reply_fit(frames: pd.DataFrame, visible: dict[str, float]) -> tuple[float, float, float]:
    """The cost of building a reply (us): fixed, per entity the model's reply lists, per
    edict of the server's list it scans.  Run by run (``frames``' ``run`` column; its
    ``condition`` names the entities the model's replies list there, ``visible``,
    :func:`simsrv.testbed.model.visible_per_reply`), the build time per reply against those
    entities and the server's edicts the run's replies scanned (the frames' ``edicts``
    weighted by their replies), by non-negative least squares.  The repeats of a condition
    list the same entities but scan different edict counts (the game spawns what the
    players' deaths leave), which is what tells the scan from the listed entities.  Without
    the ``edicts`` column (a campaign measured before the patch recorded it) the scan is
    not separated: a line against the listed entities, scan 0."""
    from scipy.optimize import nnls

    if "edicts" in frames:
        frames = frames.assign(scanned=frames["edicts"] * frames["replies"])
    agg = {
        "condition": ("condition", "first"),
        "build": ("build_us", "sum"),
        "replies": ("replies", "sum"),
    }
    if "scanned" in frames:
        agg["scanned"] = ("scanned", "sum")
    per_run = frames.groupby("run").agg(**agg)
    replies = per_run["replies"].to_numpy(dtype=float)
    reply = per_run["build"].to_numpy() / replies
    columns = [np.ones(len(reply)), per_run["condition"].map(visible).to_numpy(dtype=float)]
    if "scanned" in per_run:
        columns.append(per_run["scanned"].to_numpy() / replies)
    coefficients, _ = nnls(np.column_stack(columns), reply)
    fixed, per_visible = max(coefficients[0], 0.1), coefficients[1]
    per_scanned = coefficients[2] if len(coefficients) > 2 else 0.0
    return float(fixed), float(per_visible), float(per_scanned)


def targets(data: Path, runs: pd.DataFrame) -> list[Target]:
    """Nine targets per calibration condition, on the mean of its repeats (module
    docstring); the model replays the first repeat's measured send times
    (:func:`simsrv.testbed.model.row_overrides`)."""
    from simsrv.testbed.build import find_shared
    from simsrv.testbed.campaign import pool_repeats
    from simsrv.testbed.model import SCENARIO, row_overrides

    shared = find_shared()
    out = []
    for _, row in pool_repeats(runs).iterrows():
        overrides = tuple(
            o
            for o in row_overrides(
                row.to_dict(), shared, seed=1, platform=PLATFORM_NAME, store=Path(data)
            )
            if not o.startswith(("run.seed=", "machine.platform=", "run.duration_s="))
        )
        for measured, quantity, relative in TARGET_QUANTITIES:
            value = float(row[measured])
            scale = RATE_TOLERANCE * value if relative else SHARE_TOLERANCE
            out.append(
                Target(
                    f"{row['label']}:{quantity}",
                    str(SCENARIO),
                    overrides,
                    quantity,
                    value,
                    scale,
                    relative=relative,
                )
            )
    return out


def _joint_fit(
    options: FitOptions,
    log: Callable[[str], None],
    files: PlatformFiles,
    runs: pd.DataFrame,
    estimate: dict[str, float],
) -> JointFit:
    start = dict(tomllib.loads(PLATFORM.read_text())["costs"])
    start.update(estimate)
    for p in PARAMETERS:
        for key in p.keys:
            start[key] *= options.start
    log(
        "direct estimate (us): "
        + ", ".join(f"{k} {start[k]:.3g}" for p in PARAMETERS for k in p.keys)
    )
    return JointFit(PARAMETERS, targets(options.data, runs), start, files, options, log)


def _build(options: FitOptions) -> tuple[pd.DataFrame, dict[str, float], BuildFit]:
    """The calibration runs, their direct estimate (read once) and the fit built on them."""
    runs = calibration_runs(options.data)
    estimate = direct_estimate(options.data, runs)
    return runs, estimate, partial(_joint_fit, runs=runs, estimate=estimate)


def report(options: FitOptions, log: Callable[[str], None]) -> FitReport:
    """The identifiability report at the direct estimate (times ``options.start``)."""
    _, _, build = _build(options)
    return report_at_start(PLATFORM, build, options, log)


def fit(options: FitOptions, log: Callable[[str], None]) -> dict[str, float]:
    """The joint fit from the direct estimate; logs the report."""
    runs, estimate, build = _build(options)
    fitted = dict(fit_and_log(PLATFORM, build, options, log).values)
    for key in SET_FROM_ESTIMATE:
        fitted[key] = estimate[key]
    fitted["_machine"] = _measured_on(options.data, runs)
    return fitted


def _measured_on(data: Path, runs: pd.DataFrame) -> str:
    from simsrv.testbed.store import read_machine

    return measured_on(read_machine(Path(data), runs["label"].iloc[0]), list(runs["label"]))


def _frames(data: Path, label: str) -> pd.DataFrame:
    """A calibration run's frame table (:data:`FRAME_COLUMNS`, ``edicts`` when recorded),
    validated, with frames in its measured window."""
    from simsrv.testbed.store import read_run_table

    table = read_run_table(
        Path(data), label, "frames.parquet", FRAME_COLUMNS, optional={"edicts": "int"}
    )
    if not table["measured"].any():
        path = Path(data) / "runs" / label / "frames.parquet"
        raise InputError(f"calibrate --data: {path}: no frame in the measured window")
    return table


def write(fitted: dict[str, float], source: Path, out: Path) -> None:
    """Write ``source`` to ``out`` with the fitted costs and the machine it was measured on
    (``description``), the platform named after ``out``'s file name."""
    write_measured(fitted, source, out, "mvdsv 0.35 on one CPU of")


CALIBRATORS.register(
    PLATFORM_NAME,
    Calibrator(PLATFORM_NAME, fit, write, duration="about 5 min", duration_s=10.0, report=report),
)
