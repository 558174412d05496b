"""QuakeTM's per-frame records (written by the patched server) as two tidy tables.

The record file starts with a 16-byte header (magic ``STQ2``, record size, thread slots, a
reserved word) followed by one fixed-size little-endian record per server frame; the layout
is ``server/sv_testbed.h`` of the QuakeTM patch, mirrored by :data:`RECORD`.
:func:`read_quaketm_frames` returns one row per frame (:data:`FRAME_COLUMNS`) and one row
per frame and OpenMP thread of the parallel request stage (:data:`THREAD_COLUMNS`).

A frame of QuakeTM: world physics (serial, the main thread), the packets read into a list
(serial), each packet's client found (serial), then the request stage: one OpenMP task per
client with packets, made by one thread (``omp single``) and taken by the team's T threads,
which leave the stage at the barrier that waits for every task; then the replies (serial).
Per-thread times of the request stage are measured from its start (the main thread's clock
just before it forks the team).  The serial build has no request stage: it processes each
packet as it reads it, and records each packet's processing as thread 0's task time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

MAGIC = 0x32515453  # "STQ2"
THREAD_SLOTS = 8
LOCK_CLASSES = ("global", "areanode", "client", "other")
"""The lock classes of the record, in its order: ``global_lock`` (the global build's lock
around each packet and every ``LOCK_COARSE`` section of ``SV_RunCmd``,
``SV_PostRunCmd`` and the string commands), the areanode tree's locks, the per-client
message locks, and the rest (edict and zone memory locks, the datagram, reliable-datagram,
signon and multicast buffer locks)."""

THREAD = np.dtype(
    [
        ("enter_s", "<f8"),
        ("first_task_s", "<f8"),
        ("last_task_end_s", "<f8"),
        ("exit_s", "<f8"),
        ("task_wall_s", "<f8"),
        ("task_cpu_s", "<f8"),
        ("region_cpu_s", "<f8"),
        ("lock_wait_s", "<f8", (4,)),
        ("lock_held_s", "<f8", (4,)),
        ("lock_acquires", "<i4", (4,)),
        ("lock_contended", "<i4", (4,)),
        ("tasks", "<i4"),
        ("packets", "<i4"),
    ]
)
RECORD = np.dtype(
    [
        ("wall_start_s", "<f8"),
        ("wall_end_s", "<f8"),
        ("cpu_frame_s", "<f8"),
        ("cpu_process_s", "<f8"),
        ("cpu_wait_s", "<f8"),
        ("cpu_physics_s", "<f8"),
        ("cpu_read_s", "<f8"),
        ("cpu_recv_s", "<f8"),
        ("cpu_group_s", "<f8"),
        ("cpu_send_s", "<f8"),
        ("cpu_sendto_s", "<f8"),
        ("wall_physics_s", "<f8"),
        ("wall_read_s", "<f8"),
        ("wall_region_s", "<f8"),
        ("wall_send_s", "<f8"),
        ("cpu_region_process_s", "<f8"),
        ("packets", "<i4"),
        ("tasks", "<i4"),
        ("connectionless", "<i4"),
        ("replies", "<i4"),
        ("active_clients", "<i4"),
        ("edicts", "<i4"),
        ("threads", "<i4"),
        ("reserved", "<i4"),
        ("thread", THREAD, (THREAD_SLOTS,)),
    ]
)

FRAME_COLUMNS = {
    "frame": "frame number, from 0 at the server's start",
    "start_s": "frame start (CLOCK_MONOTONIC, s), after the sleep to the period; the "
    "clients' clock",
    "wall_us": "frame compute time (us): its start to its end, the sleep excluded",
    "cpu_us": "main thread CPU over the frame (us)",
    "process_cpu_us": "CPU of every thread of the server over the frame (us)",
    "physics_us": "main thread CPU in world physics, SV_Physics (us)",
    "read_us": "main thread CPU reading the packets (serial; the serial build processes them "
    "here too) (us)",
    "recv_syscall_us": "of read_us, CPU inside recvfrom() (us)",
    "group_us": "main thread CPU finding each packet's client before the request stage (us)",
    "send_us": "main thread CPU building and sending the replies, SV_SendClientMessages (us)",
    "send_syscall_us": "of send_us, CPU inside sendto() (us)",
    "build_us": "send_us - send_syscall_us (us)",
    "physics_wall_us": "wall time of SV_Physics (us)",
    "read_wall_us": "wall time reading the packets (us)",
    "request_wall_us": "wall time of the parallel request stage, fork to join (us); 0 without "
    "one (no packets, or the serial build)",
    "send_wall_us": "wall time of the replies (us)",
    "request_process_cpu_us": "CPU of every thread over the request stage (us)",
    "request_work_us": "wall time inside the request tasks, summed over threads (us): the "
    "serial build's per-packet processing",
    "request_work_cpu_us": "thread CPU inside the request tasks, summed over threads (us)",
    "select_us": "main thread CPU between the previous frame's end and this start (us)",
    "packets": "packets from known clients processed",
    "tasks": "request tasks (clients with packets this frame)",
    "connectionless": "connectionless packets (challenge, connect, status)",
    "replies": "replies sent",
    "active_clients": "clients in the game at the frame's end",
    "edicts": "the server's edicts at the frame's end",
    "threads": "the OpenMP team's size",
    **{
        f"lock_wait_{c}_us": f"wall time waiting for {c} locks, summed over threads (us)"
        for c in LOCK_CLASSES
    },
    **{
        f"lock_held_{c}_us": f"wall time holding {c} locks (a thread's outermost hold), "
        "summed over threads (us)"
        for c in LOCK_CLASSES
    },
    **{f"lock_acquires_{c}": f"{c} lock acquisitions in the request stage" for c in LOCK_CLASSES},
    **{f"lock_contended_{c}": "of those, found held by another thread" for c in LOCK_CLASSES},
    "wake_us": "wall time from the request stage's start to each thread's entry, summed over "
    "threads (us): waking the team",
    "idle_end_us": "wall time threads spent at the request stage's closing barrier after "
    "their last task, summed over threads (us)",
    "overhead_us": "the rest of the threads' time in the request stage, summed over threads: "
    "making and taking tasks, waiting for a task (us)",
    "join_us": "wall time from each thread's exit to the stage's end, summed over threads (us)",
}

THREAD_COLUMNS = {
    "frame": "frame number",
    "thread": "OpenMP thread number (0: the main thread)",
    "enter_us": "entered the request stage (its body, or its first task if that came first: "
    "a thread woken late runs tasks at the region's opening barrier), from its start (us)",
    "first_task_us": "its first task began, from the stage's start (us); NaN if none",
    "last_task_end_us": "its last task ended, from the stage's start (us); NaN if none",
    "exit_us": "left the stage's closing barrier, from its start (us)",
    "task_wall_us": "wall time inside its tasks, lock waits included (us)",
    "task_cpu_us": "thread CPU inside its tasks (us)",
    "region_cpu_us": "thread CPU from entering the stage to leaving it (us)",
    **{f"lock_wait_{c}_us": f"wall time waiting for {c} locks (us)" for c in LOCK_CLASSES},
    **{f"lock_held_{c}_us": f"wall time holding {c} locks (us)" for c in LOCK_CLASSES},
    **{f"lock_acquires_{c}": f"{c} lock acquisitions" for c in LOCK_CLASSES},
    **{f"lock_contended_{c}": f"{c} acquisitions found held" for c in LOCK_CLASSES},
    "tasks": "tasks it ran",
    "packets": "packets those tasks processed",
    "idle_end_us": "exit_us minus last_task_end_us (minus enter_us if it ran no task) (us)",
    "overhead_us": "exit_us - enter_us - task_wall_us - idle_end_us (us)",
}


def read_records(path: Path) -> np.ndarray:
    """The raw records; a trailing partial record (a server killed mid-write) is dropped."""
    data = Path(path).read_bytes()
    if len(data) < 16:
        raise ValueError(f"{path}: no QuakeTM frame header")
    magic, size, slots = np.frombuffer(data[:12], "<u4")
    if magic != MAGIC or size != RECORD.itemsize or slots != THREAD_SLOTS:
        raise ValueError(
            f"{path}: not a QuakeTM frame file of this version (magic {magic:#x}, record "
            f"{size} bytes, {slots} thread slots; expected {RECORD.itemsize}, {THREAD_SLOTS})"
        )
    body = data[16:]
    whole = len(body) // RECORD.itemsize * RECORD.itemsize
    return np.frombuffer(body[:whole], RECORD)


def _by_class(name: str, values: np.ndarray) -> dict[str, np.ndarray]:
    """One column per lock class from an array with a class axis last."""
    return {name.format(c): values[..., k] for k, c in enumerate(LOCK_CLASSES)}


def _class_columns(name: str) -> list[str]:
    return [name.format(c) for c in LOCK_CLASSES]


def threads_table(records: np.ndarray) -> pd.DataFrame:
    """One row per frame with a request stage and thread of its team (:data:`THREAD_COLUMNS`)."""
    us = 1e6
    parallel = np.flatnonzero(records["wall_region_s"] > 0)
    team = records["threads"][parallel].clip(1, THREAD_SLOTS)
    frame = np.repeat(parallel, team)
    thread = np.concatenate([np.arange(t) for t in team]) if len(team) else np.empty(0, int)
    t = records["thread"][frame, thread] if len(frame) else np.empty(0, THREAD)
    ran = t["tasks"] > 0
    enter, exit_ = t["enter_s"] * us, t["exit_s"] * us
    last_end = np.where(ran, t["last_task_end_s"] * us, np.nan)
    idle = np.where(ran, exit_ - last_end, exit_ - enter)
    table = pd.DataFrame(
        {
            "frame": frame.astype(np.int64),
            "thread": thread.astype(np.int64),
            "enter_us": enter,
            "first_task_us": np.where(ran, t["first_task_s"] * us, np.nan),
            "last_task_end_us": last_end,
            "exit_us": exit_,
            "task_wall_us": t["task_wall_s"] * us,
            "task_cpu_us": t["task_cpu_s"] * us,
            "region_cpu_us": t["region_cpu_s"] * us,
            **_by_class("lock_wait_{}_us", t["lock_wait_s"] * us),
            **_by_class("lock_held_{}_us", t["lock_held_s"] * us),
            **_by_class("lock_acquires_{}", t["lock_acquires"].astype(np.int64)),
            **_by_class("lock_contended_{}", t["lock_contended"].astype(np.int64)),
            "tasks": t["tasks"].astype(np.int64),
            "packets": t["packets"].astype(np.int64),
            "idle_end_us": idle,
            "overhead_us": exit_ - enter - t["task_wall_s"] * us - idle,
        }
    )  # fmt: skip
    assert list(table.columns) == list(THREAD_COLUMNS)
    return table


def frames_table(records: np.ndarray, threads: pd.DataFrame) -> pd.DataFrame:
    """One row per frame (:data:`FRAME_COLUMNS`); the per-thread sums from ``threads``."""
    us = 1e6
    r = records
    n = len(r)
    send, sendto = r["cpu_send_s"] * us, r["cpu_sendto_s"] * us
    summed = threads.groupby("frame").sum(numeric_only=True).reindex(np.arange(n), fill_value=0)
    # the serial build: its per-packet processing is thread 0's task time, no request stage
    slot0 = r["thread"][:, 0] if n else np.empty(0, THREAD)
    serial = r["wall_region_s"] <= 0
    work = np.where(serial, slot0["task_wall_s"] * us, summed["task_wall_us"].to_numpy())
    work_cpu = np.where(serial, slot0["task_cpu_s"] * us, summed["task_cpu_us"].to_numpy())
    table = pd.DataFrame(
        {
            "frame": np.arange(n, dtype=np.int64),
            "start_s": r["wall_start_s"],
            "wall_us": (r["wall_end_s"] - r["wall_start_s"]) * us,
            "cpu_us": r["cpu_frame_s"] * us,
            "process_cpu_us": r["cpu_process_s"] * us,
            "physics_us": r["cpu_physics_s"] * us,
            "read_us": r["cpu_read_s"] * us,
            "recv_syscall_us": r["cpu_recv_s"] * us,
            "group_us": r["cpu_group_s"] * us,
            "send_us": send,
            "send_syscall_us": sendto,
            "build_us": send - sendto,
            "physics_wall_us": r["wall_physics_s"] * us,
            "read_wall_us": r["wall_read_s"] * us,
            "request_wall_us": r["wall_region_s"] * us,
            "send_wall_us": r["wall_send_s"] * us,
            "request_process_cpu_us": r["cpu_region_process_s"] * us,
            "request_work_us": work,
            "request_work_cpu_us": work_cpu,
            "select_us": r["cpu_wait_s"] * us,
            "packets": r["packets"].astype(np.int64),
            "tasks": r["tasks"].astype(np.int64),
            "connectionless": r["connectionless"].astype(np.int64),
            "replies": r["replies"].astype(np.int64),
            "active_clients": r["active_clients"].astype(np.int64),
            "edicts": r["edicts"].astype(np.int64),
            "threads": r["threads"].astype(np.int64),
            **{
                name: summed[name].to_numpy()
                for name in _class_columns("lock_wait_{}_us") + _class_columns("lock_held_{}_us")
            },
            **{
                name: summed[name].to_numpy().astype(np.int64)
                for name in _class_columns("lock_acquires_{}") + _class_columns("lock_contended_{}")
            },
            "wake_us": summed["enter_us"].to_numpy(),
            "idle_end_us": summed["idle_end_us"].to_numpy(),
            "overhead_us": summed["overhead_us"].to_numpy(),
            "join_us": np.where(
                serial, 0.0, r["threads"] * r["wall_region_s"] * us - summed["exit_us"].to_numpy()
            ),
        }
    )  # fmt: skip
    assert list(table.columns) == list(FRAME_COLUMNS)
    return table


def read_quaketm_frames(path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The frames table and the threads table of a QuakeTM record file."""
    records = read_records(path)
    threads = threads_table(records)
    return frames_table(records, threads), threads
