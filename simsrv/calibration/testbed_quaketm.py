"""Calibrate the platform of QuakeTM on this machine (``this-machine-quaketm``).

Run with ``simsrv calibrate this-machine-quaketm --data DIR`` where DIR is a campaign stored
by ``simsrv testbed --campaign quaketm --out DIR`` holding the primitive costs measured by
``simsrv testbed --primitives --out DIR`` in the same sitting (docs/quaketm.md).

What each cost is set from (no parameter is fitted to a parallel run):

* **The work costs, from the serial build's calibration runs only** (dm1, 8-32 clients,
  independent phases, 100 ms frames): each stage's thread CPU time per unit the model
  charges it by, pooled over the runs' measured frames.  ``request_per_message``: the
  per-packet processing (``Netchan_Process`` and ``SV_ExecuteClientMessage``);
  ``net_recv_per_message``: ``recvfrom``; ``queue_per_message``: the rest of the read loop
  per packet (filtering, the header, finding the client); ``reply_per_client`` and
  ``net_send_per_reply``: building a reply and its ``sendto``; ``world_base`` and
  ``world_per_entity``: a least-squares line of ``SV_Physics``'s time against the players;
  ``frame_overhead``: the rest of the frame.
* **The synchronisation costs, from the primitive benchmark** (medians over its repeats):
  ``lock_acquire``: an uncontended ``omp_set_lock`` + ``omp_unset_lock``; ``barrier``: a
  barrier of two spinning threads; ``signal_send`` 0 (the releaser's futex wake is inside
  the hand-off).  A sleeping thread's wake-up grows with how long its CPU slept (deeper idle
  states of the virtual CPU): the lock hand-offs after holds of 1 us to 1 ms and the team's
  wake-ups after 0 to 100 ms idle, ``y(g) = signal_wakeup + cold_refill_us * (1 - exp(-g /
  cold_decay_us))`` with ``g`` the hold or the idle gap, fitted by least squares to those
  eight medians (:func:`wake_fit`): ``signal_wakeup`` the constant part (charged at every
  wake of a sleeper: a lock's hand-off, a barrier's opening), the machine's cold start the
  part that grows (charged to the first computation on a CPU after it idled).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from simsrv.calibration.fitting import CALIBRATORS, Calibrator, FitOptions
from simsrv.calibration.platform_file import measured_on, write_measured
from simsrv.core.errors import InputError
from simsrv.platforms.profile import PLATFORM_DIR

PLATFORM_NAME = "this-machine-quaketm"
PLATFORM = PLATFORM_DIR / f"{PLATFORM_NAME}.toml"


def calibration_runs(data: Path | None) -> list[Path]:
    """The run directories of the campaign's calibration conditions (the serial build)."""
    if data is None:
        raise InputError("calibrate this-machine-quaketm needs --data DIR (a QuakeTM campaign)")
    runs = sorted(
        d
        for d in (Path(data) / "runs").glob("quaketm-serial-*")
        if (d / "summary.json").is_file()
        and json.loads((d / "summary.json").read_text()).get("config", {}).get("server_cpu") is None
        and "-dm1-" in d.name
        and "-independent-" in d.name
        and "-f100ms-" in d.name
    )
    if not runs:
        raise InputError(f"calibrate this-machine-quaketm: no serial dm1 runs in {data}/runs")
    return runs


def _window(run: Path) -> tuple[pd.DataFrame, int]:
    frames = pd.read_parquet(run / "frames.parquet")
    summary = json.loads((run / "summary.json").read_text())
    return frames[frames["measured"]], int(summary["config"]["clients"])


def work_costs(runs: list[Path]) -> dict[str, float]:
    """The work costs (us) from the serial runs' measured frames (module docstring)."""
    window = pd.concat([_window(r)[0] for r in runs], ignore_index=True)
    packets = float(window["packets"].sum())
    replies = float(window["replies"].sum())
    work = float(window["request_work_cpu_us"].sum())
    recv = float(window["recv_syscall_us"].sum())
    read = float(window["read_us"].sum())
    players, physics = [], []
    for run in runs:
        frames, clients = _window(run)
        players += [clients] * len(frames)
        physics += frames["physics_us"].tolist()
    slope, base = np.polyfit(np.asarray(players, float), np.asarray(physics, float), 1)
    other = window["cpu_us"] - window["physics_us"] - window["read_us"] - window["group_us"]
    other -= window["send_us"]
    return {
        "request_per_message": work / packets,
        "net_recv_per_message": recv / packets,
        "queue_per_message": (read - recv - work) / packets,
        "reply_per_client": float(window["build_us"].sum()) / replies,
        "net_send_per_reply": float(window["send_syscall_us"].sum()) / replies,
        "world_per_entity": float(max(slope, 0.0)),
        "world_base": float(max(base, 0.0)),
        "frame_overhead": float(other.mean()),
    }


def primitive_costs(data: Path) -> dict[str, float]:
    """The synchronisation costs (us) from ``DIR/primitives.parquet`` (module docstring)."""
    path = Path(data) / "primitives.parquet"
    if not path.is_file():
        raise InputError(
            f"calibrate this-machine-quaketm: no {path}; measure it in the same sitting with "
            f"simsrv testbed --primitives --out {data}"
        )
    table = pd.read_parquet(path)

    def median(quantity: str, policy: str, parameters: tuple[float, ...] | None = None) -> float:
        rows = table[(table["quantity"] == quantity) & (table["policy"] == policy)]
        if parameters is not None:
            rows = rows[rows["parameter"].isin(parameters)]
        return float(rows["value_ns"].median()) * 1e-3

    wakes = table[table["quantity"].isin(("lock_handoff_ns", "fork_wake_ns"))]
    wakes = wakes[wakes["policy"] == "passive"]
    points = wakes.groupby(["quantity", "parameter"])["value_ns"].median().reset_index()
    signal, refill, decay = wake_fit(points["parameter"].to_numpy(), points["value_ns"] * 1e-3)
    return {
        "lock_acquire": median("lock_uncontended_ns", "passive"),
        "barrier": median("barrier_ns", "active"),
        "signal_wakeup": signal,
        "signal_send": 0.0,
        "cold_refill_us": refill,
        "cold_decay_us": decay,
    }


def wake_fit(idle_us: np.ndarray, wake_us: np.ndarray) -> tuple[float, float, float]:
    """``(constant, grows_to, decay)`` (us) of ``wake = constant + grows_to * (1 - exp(-idle
    / decay))`` fitted to the benchmark's wake-ups by least squares (each >= 0, the decay in
    [100 us, 1 s])."""
    from scipy.optimize import least_squares

    idle, wake = np.asarray(idle_us, float), np.asarray(wake_us, float)

    def residuals(p: np.ndarray) -> np.ndarray:
        return p[0] + p[1] * (1.0 - np.exp(-idle / p[2])) - wake

    start = np.array([wake.min(), max(wake.max() - wake.min(), 1.0), 10_000.0])
    fit = least_squares(residuals, start, bounds=([0.0, 0.0, 100.0], [1e6, 1e6, 1e6]))
    return float(fit.x[0]), float(fit.x[1]), float(fit.x[2])


def fit(options: FitOptions, log: Callable[[str], None]) -> dict[str, float]:
    """The platform's values from the campaign in ``options.data`` (nothing fitted)."""
    runs = calibration_runs(options.data)
    values = {**work_costs(runs), **primitive_costs(options.data)}
    for key, value in values.items():
        log(f"  {key} = {value:.6g} us")
    machine = json.loads((runs[0] / "summary.json").read_text())["machine"]
    values["_machine"] = measured_on(machine, [r.name for r in runs])
    return values


def write(fitted: dict[str, float], source: Path, out: Path) -> None:
    """``source`` with the values set and the machine in ``description``."""
    write_measured(fitted, source, out, "QuakeTM on")


CALIBRATORS.register(PLATFORM_NAME, Calibrator(PLATFORM_NAME, fit, write, duration="a few seconds"))
