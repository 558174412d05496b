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


FRAME_COLUMNS = {
    "measured": "bool", "packets": "int", "replies": "int", "request_work_cpu_us": "float",
    "recv_syscall_us": "float", "read_us": "float", "physics_us": "float", "cpu_us": "float",
    "group_us": "float", "send_us": "float", "build_us": "float", "send_syscall_us": "float",
}  # fmt: skip
"""The columns of a serial run's ``frames.parquet`` the work costs read."""


def calibration_runs(data: Path | None) -> pd.DataFrame:
    """The campaign's serial dm1 runs in independent phases with 100 ms frames, the server's
    threads free on every CPU (rows of its ``runs.parquet``, read by
    :func:`simsrv.testbed.store.read_runs`), or one :class:`InputError` line."""
    from simsrv.testbed.store import read_runs

    if data is None:
        raise InputError("calibrate this-machine-quaketm needs --data DIR (a QuakeTM campaign)")
    table = read_runs(Path(data), "calibrate --data")
    runs = table[
        (table["config.server"] == "quaketm-serial")
        & table["config.server_cpu"].isna()
        & (table["config.map"] == "dm1")
        & (table["config.phases"] == "independent")
        & (table["config.frame_s"] == 0.1)
    ]
    if runs.empty:
        raise InputError(
            f"calibrate this-machine-quaketm: no serial dm1 runs in {data}/runs.parquet"
        )
    return runs.sort_values("label").reset_index(drop=True)


def _window(data: Path, label: str) -> pd.DataFrame:
    from simsrv.testbed.store import read_run_table

    frames = read_run_table(Path(data), label, "frames.parquet", FRAME_COLUMNS)
    window = frames[frames["measured"]]
    if window.empty:
        path = Path(data) / "runs" / label / "frames.parquet"
        raise InputError(f"calibrate --data: {path}: no frame in the measured window")
    return window


def work_costs(data: Path, runs: pd.DataFrame) -> dict[str, float]:
    """The work costs (us) from the serial runs' measured frames (module docstring)."""
    windows = [_window(data, label) for label in runs["label"]]
    window = pd.concat(windows, ignore_index=True)
    packets = float(window["packets"].sum())
    replies = float(window["replies"].sum())
    if packets == 0 or replies == 0:
        raise _unpinned(
            data,
            "request_per_message, reply_per_client and the other work costs",
            "the serial runs' measured frames read no packet or sent no reply",
        )
    clients = runs["config.clients"].astype(int).tolist()
    if len(set(clients)) < 2:
        raise _unpinned(
            data,
            "world_base and world_per_entity",
            f"every serial run has {clients[0]} clients; the line of the world's time "
            "against the players needs two client counts or more",
        )
    work = float(window["request_work_cpu_us"].sum())
    recv = float(window["recv_syscall_us"].sum())
    read = float(window["read_us"].sum())
    players, physics = [], []
    for frames, count in zip(windows, clients, strict=True):
        players += [count] * len(frames)
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


def _unpinned(data: Path, parameters: str, why: str) -> InputError:
    """The one line refusing a fit whose data cannot pin ``parameters``."""
    return InputError(f"calibrate --data {data}: {parameters} cannot be set: {why}")


PRIMITIVES = (
    ("lock_uncontended_ns", "passive"),
    ("barrier_ns", "active"),
    ("lock_handoff_ns", "passive"),
    ("fork_wake_ns", "passive"),
)
"""The primitive benchmark's quantities (and wait policies) the platform is set from."""


def primitive_costs(data: Path) -> dict[str, float]:
    """The synchronisation costs (us) from ``DIR/primitives.parquet`` (module docstring)."""
    from simsrv.testbed.store import read_table

    path = Path(data) / "primitives.parquet"
    if not path.is_file():
        raise InputError(
            f"calibrate this-machine-quaketm: no {path}; measure it in the same sitting with "
            f"simsrv testbed --primitives --out {data}"
        )
    table = read_table(path, ["quantity", "policy", "parameter", "value_ns"])
    wake = table["quantity"].isin(("lock_handoff_ns", "fork_wake_ns")).to_numpy()
    for column, rows in (("value_ns", slice(None)), ("parameter", wake)):
        values = table[column]
        if not pd.api.types.is_float_dtype(values):
            raise InputError(f"{path}: column {column} must hold numbers, got {values.dtype}")
        numbers = values.to_numpy()[rows]
        if not (np.isfinite(numbers).all() and (numbers >= 0).all()):
            raise InputError(f"{path}: column {column} must hold finite numbers >= 0")
    for quantity, policy in PRIMITIVES:
        if not ((table["quantity"] == quantity) & (table["policy"] == policy)).any():
            raise InputError(f"{path}: no {quantity} measured with the {policy} wait policy")

    def median(quantity: str, policy: str, parameters: tuple[float, ...] | None = None) -> float:
        rows = table[(table["quantity"] == quantity) & (table["policy"] == policy)]
        if parameters is not None:
            rows = rows[rows["parameter"].isin(parameters)]
        return float(rows["value_ns"].median()) * 1e-3

    wakes = table[table["quantity"].isin(("lock_handoff_ns", "fork_wake_ns"))]
    wakes = wakes[wakes["policy"] == "passive"]
    points = wakes.groupby(["quantity", "parameter"])["value_ns"].median().reset_index()
    if points["parameter"].nunique() < 3:
        raise _unpinned(
            data,
            "signal_wakeup, cold_refill_us and cold_decay_us",
            f"{path} has wake-ups after {points['parameter'].nunique()} idle times; the "
            "curve needs three or more",
        )
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
    from simsrv.testbed.store import read_machine

    runs = calibration_runs(options.data)
    values = {**work_costs(options.data, runs), **primitive_costs(options.data)}
    for key, value in values.items():
        log(f"  {key} = {value:.6g} us")
    machine = read_machine(Path(options.data), runs["label"].iloc[0])
    values["_machine"] = measured_on(machine, list(runs["label"]))
    return values


def write(fitted: dict[str, float], source: Path, out: Path) -> None:
    """``source`` with the values set and the machine in ``description``."""
    write_measured(fitted, source, out, "QuakeTM on")


CALIBRATORS.register(PLATFORM_NAME, Calibrator(PLATFORM_NAME, fit, write, duration="a few seconds"))
