"""The model of QuakeTM against its measured campaign (``simsrv testbed --compare DIR``).

Every stored QuakeTM condition (``simsrv testbed --campaign quaketm``) is run in the model
as ``scenarios/testbed/quaketm-dm1.toml`` plus overrides (:func:`condition_overrides`): the
clients, rate, map, duration, the clients' measured send times replayed, the build and its
threads (``server.options``), the frame period, and, for runs whose idle OpenMP threads spin
(``omp_wait = "active"``), no sleeping waiters (``signal_wakeup`` and ``signal_send`` 0).
The platform is ``this-machine-quaketm``: calibrated on the serial build's runs only, its
synchronisation costs measured by ``simsrv testbed --primitives``.

:func:`model_quantities` reads a model run the way the patched server reads itself: per
frame, the compute time (its start to its end), and, inside the request stage (the main
thread's fork to its return from the closing barrier), the team's time split into waking,
work, lock waits (a contended lock's wait and the waiter's wake-up after it), idle at the
closing barrier and the rest.  :data:`QUANTITIES` pairs them with the measured summary keys.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from simsrv.testbed.build import SharedFolder
from simsrv.testbed.compare import execute_all
from simsrv.testbed.model import Compared, config_from_row, judged, row_overrides

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "testbed" / "quaketm-dm1.toml"
PLATFORM = "this-machine-quaketm"
WORK = ("request", "request_locked", "lock")


QUANTITIES: tuple[Compared, ...] = (
    Compared("frame_compute_ms.mean", "frame_compute_ms", 0.10, True, "frame compute time"),
    Compared("request.wall_ms_per_frame", "request_wall_ms", 0.10, True, "request stage wall"),
    Compared("messages_per_frame", "messages_per_frame", 0.10, True, "messages/frame"),
    Compared("replies_per_s", "replies_per_s", 0.10, True, "replies/s"),
    Compared("request.lock_wait_share", "lock_wait_share", 0.05, False, "lock-wait share"),
    Compared("request.wake_share", "wake_share", 0.05, False, "waking share"),
    Compared("request.idle_end_share", "idle_end_share", 0.05, False, "idle-at-barrier share"),
)


def condition_overrides(
    row: dict, shared: SharedFolder, *, seed: int, store: Path | None = None
) -> list[str]:
    """``--set`` overrides of :data:`SCENARIO` for one stored QuakeTM condition."""
    config = config_from_row(row)
    out = [
        o
        for o in row_overrides(row, shared, seed=seed, platform=PLATFORM, store=store)
        if not o.startswith(("server.scanned_entities", "clients.receiver_idle_share"))
    ]
    out += [
        f"server.options.variant={config.quaketm}",
        f"server.options.threads={config.threads}",
        f"server.frame_period_s={config.frame_s!r}",
    ]
    if config.omp_wait == "active":  # waiters spin: no sleeper to wake
        out += ["machine.costs.signal_wakeup=0", "machine.costs.signal_send=0"]
    return out


def _stage_bounds(thread0: pd.DataFrame) -> tuple[float, float] | None:
    """The request stage of one frame from the main thread's intervals: the end of its fork
    barrier's cost to the start of its first reply interval (or its last interval's end)."""
    barriers = thread0.index[thread0["activity"] == "barrier"]
    if len(barriers) < 2:
        return None
    start = float(thread0.loc[barriers[0], "end_s"])
    after = thread0.loc[barriers[1] :]
    replies = after[after["activity"].isin(("reply_info", "reply", "net_send"))]
    end = float(replies["start_s"].iloc[0]) if len(replies) else float(after["end_s"].iloc[-1])
    return start, end


def stage_split(trace: pd.DataFrame, team: int) -> dict[str, float]:
    """The team's time in the request stages of ``trace`` (s summed over frames) by part."""
    parts = dict.fromkeys(("team", "stage", "wake", "work", "lock_wait", "idle_end"), 0.0)
    stages = 0
    for _, frame in trace.groupby("frame", sort=True):
        frame = frame.sort_values(["thread", "start_s"], kind="stable")
        bounds = _stage_bounds(frame[frame["thread"] == "thread0"].reset_index(drop=True))
        if bounds is None:
            continue
        start, end = bounds
        stages += 1
        parts["stage"] += end - start
        parts["team"] += team * (end - start)
        for _, ops in frame.groupby("thread", sort=True, observed=True):
            inside = ops[(ops["end_s"] > start) & (ops["start_s"] < end)]
            activity = inside["activity"].astype(str).to_numpy()
            length = (
                inside["end_s"].clip(upper=end) - inside["start_s"].clip(lower=start)
            ).to_numpy()
            worked = np.isin(activity, WORK)
            parts["work"] += float(length[worked].sum())
            previous = np.concatenate([[""], activity[:-1]])
            at_lock = (activity == "lock_wait") | (
                (activity == "signal_wakeup") & (previous == "lock_wait")
            )
            parts["lock_wait"] += float(length[at_lock].sum())
            if worked.any():
                first = int(np.argmax(worked))
                last = len(worked) - 1 - int(np.argmax(worked[::-1]))
                parts["wake"] += float(inside["start_s"].iloc[first] - start)
                parts["idle_end"] += float(end - inside["end_s"].iloc[last])
            else:
                parts["idle_end"] += end - start
    parts["stages"] = stages
    return parts


COLD = ("cold_start", "cold_refill")


def waking_s(trace: pd.DataFrame, frames: pd.DataFrame) -> np.ndarray:
    """Per frame (``frames``' order), the main thread's cold start before its first work, s:
    the wake from its sleep to the period's start, which the real server's frame record
    starts after (its clock is read once the thread runs)."""
    main = trace[trace["thread"] == "thread0"].sort_values(["frame", "start_s"], kind="stable")
    out = dict.fromkeys(frames["frame"].tolist(), 0.0)
    for frame, rows in main.groupby("frame", sort=False):
        activity = rows["activity"].astype(str).to_numpy()
        leading = np.cumprod(np.isin(activity, COLD)).astype(bool)
        out[frame] = float((rows["end_s"] - rows["start_s"]).to_numpy()[leading].sum())
    return np.array([out[f] for f in frames["frame"]])


def model_quantities(overrides: tuple[str, ...]) -> dict[str, float]:
    """One model run of a condition: the quantities of :data:`QUANTITIES`."""
    from simsrv.pipeline.keep_window import KEEP_ALL
    from simsrv.pipeline.load import load_scenario
    from simsrv.pipeline.result import run

    scenario = load_scenario(str(SCENARIO), list(overrides))
    result = run(scenario, keep_trace=KEEP_ALL, keep_frames=KEEP_ALL)
    warm = scenario.run.warmup_s
    frames = result.frames[result.frames["start_s"] >= warm]
    trace = result.trace[result.trace["frame"].isin(frames["frame"])]
    options = scenario.server.options
    team = 1 if options.variant == "serial" else int(options.threads)
    split = stage_split(trace, team) if options.variant != "serial" else {}
    team_s = split.get("team", 0.0)

    def share(part: str) -> float:
        return split[part] / team_s if team_s else float("nan")

    busy = frames[frames["messages"] > 0]
    compute_s = frames["duration_s"].to_numpy() - waking_s(trace, frames)
    return {
        "frame_compute_ms": float(compute_s.mean() * 1e3),
        "request_wall_ms": split["stage"] / split["stages"] * 1e3
        if split.get("stages")
        else float("nan"),
        "messages_per_frame": float(frames["messages"].mean()),
        "replies_per_s": float(frames["replies"].sum() / scenario.run.duration_s),
        "lock_wait_share": share("lock_wait"),
        "wake_share": share("wake"),
        "idle_end_share": share("idle_end"),
        "frames_with_packets": float(len(busy)),
    }


def run_model(
    rows: list[dict],
    shared: SharedFolder,
    seeds: int,
    workers: int,
    log: Callable[[str], None],
    store: Path | None = None,
) -> list[dict[str, float]]:
    """The model's seed-mean quantities for each pooled condition row."""
    jobs = [
        tuple(condition_overrides(row, shared, seed=seed, store=store))
        for row in rows
        for seed in range(1, seeds + 1)
    ]
    log(f"model: {len(jobs)} runs ({len(rows)} conditions x {seeds} seeds)")
    results = execute_all(jobs, workers, model_quantities)
    out = []
    for i in range(len(rows)):
        chunk = results[i * seeds : (i + 1) * seeds]
        out.append({q: float(np.nanmean([r[q] for r in chunk])) for q in chunk[0]})
    return out


def _value(row: dict, key: str) -> float:
    value = row.get(key)
    return float("nan") if value is None else float(value)


def compare_rows(pooled: pd.DataFrame, model: list[dict[str, float]]) -> pd.DataFrame:
    """One row per (condition, quantity): measured mean and spread, model, error, tolerance
    (the quantity's, or the repeats' spread where wider), within."""
    rows = []
    for (_, m), q in zip(pooled.iterrows(), model, strict=True):
        for c in QUANTITIES:
            real, sim = _value(m, c.measured), q.get(c.model, float("nan"))
            if math.isnan(real) or math.isnan(sim):
                continue
            spread = _value(m, f"spread.{c.measured}")
            spread = 0.0 if math.isnan(spread) else spread
            rows.append(
                {
                    **condition_columns(m),
                    "quantity": c.label,
                    "measured": real,
                    "model": sim,
                    **judged(c, real, sim, spread),
                }
            )
    return pd.DataFrame(rows)


def condition_columns(m: pd.Series | dict) -> dict:
    """A pooled row's condition: its label and the fields the tables group by."""
    return {
        "condition": m.get("condition", m["label"]),
        "repeats": int(m.get("repeats", 1)),
        "role": m["role"],
        "question": m["question"],
        "server": m["config.server"],
        "threads": int(m["config.threads"]),
        "clients": int(m["config.clients"]),
        "map": m["config.map"],
        "phases": m["config.phases"],
        "frame_ms": float(m["config.frame_s"]) * 1e3,
        "omp_wait": m["config.omp_wait"],
        "server_cpu": "all"
        if pd.isna(m.get("config.server_cpu"))
        else str(int(m["config.server_cpu"])),
        "bind": bool(m.get("config.bind", False)),
    }


SPEEDUP_KEYS = ("server", "clients", "map", "phases", "frame_ms", "omp_wait")


def speedups(table: pd.DataFrame) -> pd.DataFrame:
    """Speedup from 1 to 2 (and 4) threads of the same build and condition, measured and
    model: the ratio of the frame compute times and of the request stages' wall times (the
    1-thread run's over the T-thread run's; > 1 is faster).  ``table``: :func:`compare_rows`'s,
    threads floating on both CPUs, no binding."""
    free = table[(table["server_cpu"] == "all") & ~table["bind"]]
    rows = []
    for quantity, name in (("frame compute time", "frame"), ("request stage wall", "request")):
        q = free[free["quantity"] == quantity]
        one = q[q["threads"] == 1].set_index(list(SPEEDUP_KEYS))
        for threads in (2, 4):
            many = q[q["threads"] == threads].set_index(list(SPEEDUP_KEYS))
            both = one.merge(many, left_index=True, right_index=True, suffixes=("_1", "_t"))
            for key, r in both.iterrows():
                measured = r["measured_1"] / r["measured_t"]
                model = r["model_1"] / r["model_t"]
                # the ratio's spread from its two means' relative spreads
                spread = measured * (r["spread_1"] + r["spread_t"])
                tolerance = max(0.10, spread / measured)
                error = (model - measured) / measured
                rows.append(
                    {
                        **dict(zip(SPEEDUP_KEYS, key, strict=True)),
                        "of": name,
                        "threads": threads,
                        "measured": measured,
                        "model": model,
                        "error": error,
                        "tolerance": tolerance,
                        "within": bool(abs(error) <= tolerance),
                    }
                )
    return pd.DataFrame(rows)
