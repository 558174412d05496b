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

MAGIC = 0x32425453  # "STB2"
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
        ("edicts", "<i4"),
        ("reserved", "<i4"),
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
    "edicts": "the server's edicts at the frame's end (sv.num_edicts: the map's, the players' "
    "and those the game spawned, free ones among them): the entity list each reply scans",
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
            "edicts": r["edicts"].astype(np.int64),
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


def idle_gaps_us(frames: pd.DataFrame) -> np.ndarray:
    """The server's idle time before each frame (us; NaN for the first): the previous frame's
    end to this frame's start, in the order of ``frames`` (sorted by start)."""
    starts = frames["start_s"].to_numpy()
    ends = starts + frames["wall_us"].to_numpy() * 1e-6
    return np.r_[np.nan, (starts[1:] - ends[:-1]) * 1e6]


class Unpinned(ValueError):
    """A fit whose frames cannot set ``parameters`` (the message says what is missing)."""

    def __init__(self, parameters: str, why: str) -> None:
        super().__init__(why)
        self.parameters = parameters


COLD_START_BOUNDS = ((0.0, 0.0, 1.0), (500.0, 1000.0, 1e5))
"""Bounds of the cold start's fit: wake (us), refill (us), decay (us)."""
QUEUED_GAP_US = 5.0
"""A frame that started within this of the previous one's end found its packet queued: it
followed no idleness (the frame records' clock reads are ~1 us apart)."""


def frames_cold_us(gap_us: np.ndarray, wake: float, refill: float, decay: float) -> np.ndarray:
    """The cold start of frames after ``gap_us`` of idleness (us): ``wake + refill (1 -
    exp(-gap / decay))``, 0 for a frame that followed no idleness (:data:`QUEUED_GAP_US`) or
    has no previous frame (NaN gap)."""
    idle = np.nan_to_num(gap_us, nan=0.0)
    return np.where(idle > QUEUED_GAP_US, wake + refill * -np.expm1(-idle / decay), 0.0)


def warm_costs(runs: list[pd.DataFrame]) -> dict[str, float]:
    """The server's costs where nothing cooled down: over the frames of every run in ``runs``
    that started within :data:`QUEUED_GAP_US` of the previous one's end (back to back, their
    packet already queued), the per-frame work (other + ``select()``) per frame and the
    receive calls and the execution per packet (us); ``frames``: how many."""
    picked = []
    for frames in runs:
        frames = frames.sort_values("start_s")
        gap = idle_gaps_us(frames)
        keep = frames["measured"].to_numpy().astype(bool) & (gap <= QUEUED_GAP_US)
        picked.append(frames[keep])
    warm = pd.concat(picked)
    packets = float(warm["packets"].sum())
    if len(warm) < 10 or packets == 0:
        raise Unpinned(
            "frame_overhead, net_recv_per_message and request_per_message",
            "no run has frames that followed the previous one at once (a crowd condition "
            "among the calibration runs gives them)",
        )
    return {
        "frame_us": float((warm["other_us"] + warm["select_us"]).mean()),
        "recv_us": float(warm["recv_syscall_us"].sum() / packets),
        "execute_us": float(warm["execute_us"].sum() / packets),
        "frames": len(warm),
    }


COLD_CPU_STALL_US = 1000.0
"""A one-packet frame whose work (per-frame, receive, execute) took longer than this (us)
was stalled (the virtual CPU descheduled): left out of :func:`cold_start_fit`."""


def cold_start_fit(runs: list[pd.DataFrame], warm: dict[str, float]) -> dict[str, float]:
    """The cold start (:mod:`simsrv.machine.cold_start`) the real server's frames show.

    Its frames with one packet from a client, no world tick and no connectionless packet
    differ mostly in the idle time ``g`` before them.  Their per-frame work, receive call and
    execution (the stages a cold start slows; the send calls' excess is the receiver's
    wake-up, :func:`send_wake_fit`; the reply's build varies with the condition) are fitted,
    over the frames of every run in ``runs``, to the ``warm`` level (:func:`warm_costs`: the
    same stages back to back) plus ``cold(g) = wake + refill (1 - exp(-g / decay))``
    (:func:`frames_cold_us`: 0 for a frame that started at once).  Least squares, so that
    the fit follows the mean (after long idleness the cost is skewed: most frames pay a
    little, some much more, and the model charges the mean); frames over
    :data:`COLD_CPU_STALL_US` are left out.  Returns ``wake_us``, ``refill_us``, ``decay_us``,
    ``refill_frame_share`` (the share of the excess beyond the wake-ups that the per-frame
    work shows, the rest being in the receive call and the execution: where the server's
    own stage timers see a cold start's refill),
    the frames used and the mean absolute residual (us)."""
    from scipy.optimize import least_squares

    gaps, works, frame_parts = [], [], []
    for frames in runs:
        frames = frames.sort_values("start_s")
        gap = idle_gaps_us(frames)
        frame = (frames["other_us"] + frames["select_us"]).to_numpy()
        work = frame + (frames["recv_syscall_us"] + frames["execute_us"]).to_numpy()
        keep = (
            frames["measured"].to_numpy().astype(bool)
            & (frames["physics_ran"].to_numpy() == 0)
            & (frames["packets"].to_numpy() == 1)
            & (frames["connectionless"].to_numpy() == 0)
            & ~np.isnan(gap)
            & (work < COLD_CPU_STALL_US)
        )
        gaps.append(gap[keep])
        works.append(work[keep])
        frame_parts.append(frame[keep])
    gap, work, frame = np.concatenate(gaps), np.concatenate(works), np.concatenate(frame_parts)
    if len(gap) < 10:
        raise Unpinned(
            "cold_start_us, cold_refill_us and cold_decay_us",
            "no run has frames of one packet to measure the cold start on",
        )
    level = warm["frame_us"] + warm["recv_us"] + warm["execute_us"]
    fit = least_squares(
        lambda p: level + frames_cold_us(gap, *p) - work,
        [10.0, 40.0, 1000.0],
        bounds=COLD_START_BOUNDS,
    )
    wake, refill, decay = (float(v) for v in fit.x)
    # the refills' part in the per-frame work: its excess beyond the wake-ups, over the
    # whole excess beyond them
    cold = gap > QUEUED_GAP_US
    wakes = wake * int(cold.sum())
    refills = float((work[cold] - level).sum()) - wakes
    frame_refills = float((frame[cold] - warm["frame_us"]).sum()) - wakes
    return {
        "wake_us": wake,
        "refill_us": refill,
        "decay_us": decay,
        "refill_frame_share": min(max(frame_refills / refills, 0.0), 1.0) if refills > 0 else 1.0,
        "frames": len(gap),
        "mean_abs_residual_us": float(np.mean(np.abs(fit.fun))),
    }


SEND_STALL_US = 1000.0
"""A frame's send calls taking longer than this (us) were stalled (the virtual CPU
descheduled), not sending: left out of :func:`send_wake_fit`."""


def send_wake_fit(runs: list[tuple[pd.DataFrame, float]]) -> dict[str, float]:
    """The replies' sends and the wake-up of their receiver (the platform's
    ``net_send_per_reply`` and ``net_send_wake``, docs/model.md "loopback replies").

    Each run comes with the share of its time the load generator (the replies' receiver)
    was idle.  Over the frames with replies of every run, the CPU of their ``sendto()``
    calls is fitted to ``per_reply x replies + wake x idle_share``: the first reply of a
    frame wakes the receiver when it sleeps, the others find it awake.  Least squares, so
    that the fit follows the mean (a frame's first send is either cheap or pays the whole
    wake-up: its distribution is two humps, and the model charges the mean); frames whose
    sends took over :data:`SEND_STALL_US` (a virtual CPU's stall) are left out.  Returns
    ``per_reply_us``, ``wake_us``, the frames used and the median absolute residual (us)."""
    from scipy.optimize import least_squares

    replies, idle, send = [], [], []
    for frames, idle_share in runs:
        keep = (
            frames["measured"].to_numpy().astype(bool)
            & (frames["replies"].to_numpy() > 0)
            & (frames["send_syscall_us"].to_numpy() < SEND_STALL_US)
        )
        replies.append(frames["replies"].to_numpy()[keep].astype(float))
        idle.append(np.full(int(keep.sum()), float(idle_share)))
        send.append(frames["send_syscall_us"].to_numpy()[keep])
    r, i, y = np.concatenate(replies), np.concatenate(idle), np.concatenate(send)
    if len(r) < 10 or np.ptp(i) <= 0.0:
        raise Unpinned(
            "net_send_per_reply and net_send_wake",
            "the sends' fit needs frames with replies from runs whose receiver was idle for "
            "different shares of the time",
        )
    fit = least_squares(
        lambda p: p[0] * r + p[1] * i - y,
        [float(np.median(y / r)), 10.0],
        bounds=([0.0, 0.0], [1e4, 1e4]),
    )
    per_reply, wake = (float(v) for v in fit.x)
    return {
        "per_reply_us": per_reply,
        "wake_us": wake,
        "frames": len(r),
        "median_abs_residual_us": float(np.median(np.abs(fit.fun))),
    }


def latency_quantiles(latencies_us: np.ndarray, points: int = 100) -> list[float]:
    """``points`` quantiles of a sample at probabilities (i + 1/2) / points (us): the form of
    a platform's ``wakeup_latency_quantiles_us`` (:mod:`simsrv.frame_steps.wakeup`)."""
    if len(latencies_us) == 0:
        raise Unpinned("wakeup_latency_quantiles_us", "no wake-up was measured")
    probabilities = (np.arange(points) + 0.5) / points
    return [float(q) for q in np.quantile(latencies_us, probabilities)]
