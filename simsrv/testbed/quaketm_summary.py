"""What a testbed run of QuakeTM adds: its OpenMP settings and its summary.

:func:`simsrv.testbed.run.run_testbed` measures ``--server quaketm-VARIANT`` as it measures
mvdsv (the same clients, sign-on, measured window and client tables); the server's records
are QuakeTM's (:mod:`simsrv.testbed.quaketm_frames`) and the summary
(:func:`summarize_quaketm`) adds what a multithreaded server has: the request stage's wall
time, the threads' time in it split into request work, lock waits per lock class, the idle
time at its closing barrier and the task overheads, and the frames' compute time against
their fixed period.

The server runs with ``OMP_WAIT_POLICY`` set from the config (``passive`` by default: an
idle thread sleeps instead of spinning, so that on a two-CPU machine it does not take the
CPU from the clients or from the other thread); its threads move between the CPUs the
server may use unless ``bind`` pins each to one (:func:`openmp_environment`).
"""

from __future__ import annotations

import os
from dataclasses import asdict

import pandas as pd

from simsrv.testbed.clients import ClientRun
from simsrv.testbed.quaketm_frames import LOCK_CLASSES
from simsrv.testbed.run import TestbedConfig, _quantiles_ms, clients_summary


def openmp_environment(config: TestbedConfig) -> dict[str, str]:
    """libgomp's settings for the run: the wait policy and, with ``bind``, one CPU per thread
    (thread 0 on a CPU other than the clients', the next thread on the next place)."""
    env = {"OMP_WAIT_POLICY": config.omp_wait.upper(), "OMP_PROC_BIND": "false"}
    if config.bind:
        cpus = sorted(os.sched_getaffinity(0))
        order = [c for c in cpus if c != config.client_cpu] + [config.client_cpu]
        env["OMP_PROC_BIND"] = "close"
        env["OMP_PLACES"] = ",".join(f"{{{c}}}" for c in order)
    return env


def _share(part: float, whole: float) -> float:
    return part / whole if whole else float("nan")


def request_stage(window: pd.DataFrame, team: int) -> dict:
    """Where the team's time in the request stage went, over ``window``'s frames.

    The team's time is ``team`` x the stage's wall time (fork to join); its parts, which sum
    to it, are waking the team (the stage's start to each thread's entry), the request work
    (wall time inside the tasks) split into the lock waits per class and the rest, the idle
    time at the closing barrier after a thread's last task, the overheads (making and taking
    the tasks, a thread waiting for a task not yet made) and the join (a thread's exit to
    the stage's end).  The serial build has no stage: its work is the per-packet
    processing, and every share is of that work.
    """
    stage_us = float(window["request_wall_us"].sum())
    work = float(window["request_work_us"].sum())
    team_us = team * stage_us if stage_us > 0 else work
    waits = {c: float(window[f"lock_wait_{c}_us"].sum()) for c in LOCK_CLASSES}
    acquires = {c: float(window[f"lock_acquires_{c}"].sum()) for c in LOCK_CLASSES}
    held = {
        c: float(window[f"lock_held_{c}_us"].sum()) if f"lock_held_{c}_us" in window else 0.0
        for c in LOCK_CLASSES
    }
    contended = {c: float(window[f"lock_contended_{c}"].sum()) for c in LOCK_CLASSES}
    packets = float(window["packets"].sum())
    with_packets = window[window["packets"] > 0]
    out = {
        "wall_ms_per_frame": float(with_packets["request_wall_us"].mean() * 1e-3)
        if len(with_packets)
        else float("nan"),
        "work_ms_per_frame": float(with_packets["request_work_us"].mean() * 1e-3)
        if len(with_packets)
        else float("nan"),
        "work_us_per_packet": _share(work, packets),
        "work_cpu_us_per_packet": _share(float(window["request_work_cpu_us"].sum()), packets),
        "wall_us_per_packet": _share(stage_us, packets),
        "work_share": _share(work - sum(waits.values()), team_us),
        "lock_wait_share": _share(sum(waits.values()), team_us),
        **{f"lock_wait_share.{c}": _share(w, team_us) for c, w in waits.items()},
        "locked_share_of_work": _share(held["global"], work - sum(waits.values())),
        "wake_share": _share(float(window["wake_us"].sum()), team_us),
        "idle_end_share": _share(float(window["idle_end_us"].sum()), team_us),
        "overhead_share": _share(float(window["overhead_us"].sum()), team_us),
        "join_share": _share(float(window["join_us"].sum()), team_us),
        **{f"lock_acquires_per_packet.{c}": _share(acquires[c], packets) for c in LOCK_CLASSES},
        **{f"lock_contended_share.{c}": _share(contended[c], acquires[c]) for c in LOCK_CLASSES},
        **{f"lock_wait_us_per_contended.{c}": _share(waits[c], contended[c]) for c in LOCK_CLASSES},
    }
    return out


def summarize_quaketm(
    config: TestbedConfig,
    frames: pd.DataFrame,
    threads: pd.DataFrame,
    clients: pd.DataFrame,
    run: ClientRun,
    extra: dict,
) -> dict:
    """The run's summary (units in the keys); every quantity over the measured window."""
    window = frames[frames["measured"]]
    duration = config.duration_s
    n_frames = len(window)
    packets = int(window["packets"].sum())
    replies = int(window["replies"].sum())
    cpu = float(window["process_cpu_us"].sum() + window["select_us"].sum())
    sent = int(clients["moves_sent"].sum())
    received = int(clients["replies_received"].sum())
    period_us = config.frame_s * 1e6
    compute = window["wall_us"].to_numpy() * 1e-6
    stage = request_stage(window, config.threads)
    serial = float(
        (window["physics_us"] + window["read_us"] + window["group_us"] + window["send_us"]).sum()
    )
    request_cpu = float(window["request_process_cpu_us"].sum())

    def per_frame_ms(column: str) -> float:
        return float(window[column].mean() * 1e-3) if n_frames else float("nan")

    return {
        "kind": "testbed",
        "server": config.server,
        "threads": config.threads,
        "frame_s": config.frame_s,
        "config": asdict(config),
        "label": config.label,
        "frames": n_frames,
        "frames_per_s": n_frames / duration,
        "overrun_share": float((window["wall_us"] > period_us).mean()) if n_frames else 0.0,
        "messages_per_frame": packets / n_frames if n_frames else float("nan"),
        "messages_per_s": packets / duration,
        "replies_per_s": replies / duration,
        "reply_ratio": received / sent if sent else float("nan"),
        "packets_sent_by_clients": sent,
        "packets_read_by_server": packets,
        "replies_received_by_clients": received,
        "frame_compute_ms": _quantiles_ms(compute),
        "frame_compute_share_of_period": float(compute.mean() / config.frame_s)
        if n_frames
        else float("nan"),
        "stage_wall_ms_per_frame": {
            "world": per_frame_ms("physics_wall_us"),
            "read": per_frame_ms("read_wall_us"),
            "request": per_frame_ms("request_wall_us"),
            "reply": per_frame_ms("send_wall_us"),
        },
        "request": stage,
        "server_cpu_utilization": cpu / (duration * 1e6),
        "cpu_share": {
            "world": _share(float(window["physics_us"].sum()), cpu),
            "net_recv": _share(float(window["recv_syscall_us"].sum()), cpu),
            "read": _share(
                float((window["read_us"] - window["recv_syscall_us"] + window["group_us"]).sum()),
                cpu,
            ),
            "request": _share(request_cpu, cpu),
            "reply": _share(float(window["build_us"].sum()), cpu),
            "net_send": _share(float(window["send_syscall_us"].sum()), cpu),
            "frame": _share(cpu - serial - request_cpu, cpu),
        },
        "us_per_reply": {
            "send": _share(float(window["send_us"].sum()), replies),
            "build": _share(float(window["build_us"].sum()), replies),
        },
        "us_per_world_tick": _share(float(window["physics_us"].sum()), n_frames),
        "edicts": float(window["edicts"].mean()) if n_frames else float("nan"),
        **clients_summary(config, clients, run),
        "omp_wait_policy": config.omp_wait,
        **extra,
    }
