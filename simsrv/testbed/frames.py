"""The server's per-frame records (written by the patched server) as a tidy table.

The record file starts with a 16-byte header (magic ``STB1``, record size, two reserved
words) followed by one fixed-size little-endian record per server frame; the layout is
``src/sv_testbed.h`` of the patch, mirrored by :data:`RECORD`.  :func:`read_frames` returns
one row per frame with units in the column names.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

MAGIC = 0x31425453
RECORD = np.dtype(
    [
        ("wall_start_s", "<f8"),
        ("wall_end_s", "<f8"),
        ("cpu_frame_s", "<f8"),
        ("cpu_read_s", "<f8"),
        ("cpu_recv_s", "<f8"),
        ("cpu_physics_s", "<f8"),
        ("cpu_send_s", "<f8"),
        ("cpu_sendto_s", "<f8"),
        ("cpu_wait_s", "<f8"),
        ("packets", "<i4"),
        ("moves", "<i4"),
        ("runcmds", "<i4"),
        ("connectionless", "<i4"),
        ("replies", "<i4"),
        ("chokes", "<i4"),
        ("active_clients", "<i4"),
        ("physics_ran", "<i4"),
    ]
)

COLUMNS = {
    "frame": "frame number, from 0 at the server's start",
    "start_s": "frame start (CLOCK_MONOTONIC, s); the clients' clock",
    "wall_us": "frame wall time (us): start to end, including time throttled by a quota",
    "cpu_us": "thread CPU time of the whole frame (us)",
    "read_us": "CPU reading and executing packets, SV_ReadPackets (us)",
    "recv_syscall_us": "of read_us, CPU inside recvfrom() (us)",
    "execute_us": "read_us - recv_syscall_us: parsing and running the moves (us)",
    "physics_us": "CPU of world physics and game logic, SV_Physics (us)",
    "send_us": "CPU building and sending replies, SV_SendClientMessages (us)",
    "send_syscall_us": "of send_us, CPU inside sendto() (us)",
    "build_us": "send_us - send_syscall_us: building the replies (us)",
    "other_us": "cpu_us minus read, physics and send: timeouts, console, statistics (us)",
    "select_us": "CPU between the previous frame and this one (the select() wake-up) (us)",
    "packets": "packets from connected clients executed",
    "moves": "moves accepted (checksum right, player spawned)",
    "commands": "user commands run (SV_RunCmd: 1-3 per move)",
    "connectionless": "connectionless packets (challenge, connect, status)",
    "replies": "replies sent",
    "chokes": "replies held back by the rate limit",
    "active_clients": "clients in the game at the frame's end",
    "physics_ran": "1 when the frame ran a world tick (sv_mintic passed)",
}


def read_records(path: Path) -> np.ndarray:
    """The raw records; a trailing partial record (a server killed mid-write) is dropped."""
    data = Path(path).read_bytes()
    if len(data) < 16:
        raise ValueError(f"{path}: no testbed frame header")
    magic, size = np.frombuffer(data[:8], "<u4")
    if magic != MAGIC or size != RECORD.itemsize:
        raise ValueError(
            f"{path}: not a testbed frame file of this version "
            f"(magic {magic:#x}, record {size} bytes, expected {RECORD.itemsize})"
        )
    body = data[16:]
    whole = len(body) // RECORD.itemsize * RECORD.itemsize
    return np.frombuffer(body[:whole], RECORD)


def frames_table(records: np.ndarray) -> pd.DataFrame:
    """One row per frame, the columns of :data:`COLUMNS`."""
    us = 1e6
    r = records
    read, recv = r["cpu_read_s"] * us, r["cpu_recv_s"] * us
    send, sendto = r["cpu_send_s"] * us, r["cpu_sendto_s"] * us
    cpu, physics = r["cpu_frame_s"] * us, r["cpu_physics_s"] * us
    table = pd.DataFrame(
        {
            "frame": np.arange(len(r), dtype=np.int64),
            "start_s": r["wall_start_s"],
            "wall_us": (r["wall_end_s"] - r["wall_start_s"]) * us,
            "cpu_us": cpu,
            "read_us": read,
            "recv_syscall_us": recv,
            "execute_us": read - recv,
            "physics_us": physics,
            "send_us": send,
            "send_syscall_us": sendto,
            "build_us": send - sendto,
            "other_us": cpu - read - physics - send,
            "select_us": r["cpu_wait_s"] * us,
            "packets": r["packets"].astype(np.int64),
            "moves": r["moves"].astype(np.int64),
            "commands": r["runcmds"].astype(np.int64),
            "connectionless": r["connectionless"].astype(np.int64),
            "replies": r["replies"].astype(np.int64),
            "chokes": r["chokes"].astype(np.int64),
            "active_clients": r["active_clients"].astype(np.int64),
            "physics_ran": r["physics_ran"].astype(np.int64),
        }
    )
    assert list(table.columns) == list(COLUMNS)
    return table


def read_frames(path: Path) -> pd.DataFrame:
    return frames_table(read_records(path))


def wakeup_latencies_us(frames: pd.DataFrame, sent_s: np.ndarray) -> np.ndarray:
    """How long after the packet that woke it each frame of an idle server started (us).

    A frame follows an idle stretch when the first packet sent after the previous frame's end
    was sent before this frame's start: that packet woke the server, and the frame started
    ``start_s`` minus its send time later (the send time is taken after ``sendto()``
    returned on the loopback interface, where delivery into the server's socket is done by
    then).  Only frames of the measured window, with a previous frame, count.
    """
    frames = frames.sort_values("start_s")
    starts = frames["start_s"].to_numpy()
    ends = starts + frames["wall_us"].to_numpy() * 1e-6
    measured = frames["measured"].to_numpy() if "measured" in frames else np.ones(len(frames), bool)
    sent = np.sort(np.asarray(sent_s, dtype=float))
    if len(starts) < 2 or len(sent) == 0:
        return np.empty(0)
    first = np.searchsorted(sent, ends[:-1], side="right")
    ok = first < len(sent)
    waker = np.where(ok, sent[np.minimum(first, len(sent) - 1)], np.inf)
    woke = ok & (waker < starts[1:]) & measured[1:]
    return (starts[1:][woke] - waker[woke]) * 1e6
