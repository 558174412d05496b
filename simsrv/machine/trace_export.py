"""Writing a run's interval trace to a file: Parquet, CSV, or Chrome trace-event JSON.

The JSON form is the Trace Event Format's "JSON object format" that Perfetto
(ui.perfetto.dev) and chrome://tracing open as a timeline: one *process* per CPU
(``pid`` = CPU index, named ``CPU i``) holding one *thread* track per server thread that ran
on it (``tid``, named after the thread), and one complete event (``"ph": "X"``) per interval:
``name`` = activity, ``cat`` = ``busy`` or ``wait``, ``ts`` and ``dur`` in microseconds, and
``args`` = the server frame.  Tracks are per thread because a blocked thread's wait overlaps
the work of the thread that has its CPU, and events on one track must nest.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from simsrv.core.errors import InputError

TRACE_SUFFIXES = (".parquet", ".csv", ".json")


def chrome_trace(trace: pd.DataFrame) -> dict:
    """The trace (columns of :mod:`simsrv.machine.trace`) as a trace-event JSON object."""
    threads = sorted({(int(c), str(t)) for c, t in zip(trace["cpu"], trace["thread"], strict=True)})
    tid = {key: i + 1 for i, key in enumerate(threads)}
    events: list[dict] = []
    for cpu in sorted({c for c, _ in threads}):
        events.append(
            {
                "name": "process_name",
                "ph": "M",
                "pid": cpu,
                "tid": 0,
                "args": {"name": f"CPU {cpu}"},
            }
        )
        events.append(
            {
                "name": "process_sort_index",
                "ph": "M",
                "pid": cpu,
                "tid": 0,
                "args": {"sort_index": cpu},
            }
        )
    for (cpu, name), number in tid.items():
        events.append(
            {"name": "thread_name", "ph": "M", "pid": cpu, "tid": number, "args": {"name": name}}
        )
    start_us = (trace["start_s"] * 1e6).round(3).tolist()
    dur_us = ((trace["end_s"] - trace["start_s"]) * 1e6).round(3).tolist()
    rows = zip(
        trace["cpu"].tolist(),
        trace["thread"].astype(str).tolist(),
        trace["activity"].astype(str).tolist(),
        trace["busy"].tolist(),
        trace["frame"].tolist(),
        start_us,
        dur_us,
        strict=True,
    )
    for cpu, thread, activity, busy, frame, ts, dur in rows:
        events.append(
            {
                "name": activity,
                "cat": "busy" if busy else "wait",
                "ph": "X",
                "pid": cpu,
                "tid": tid[(cpu, thread)],
                "ts": ts,
                "dur": dur,
                "args": {"frame": frame},
            }
        )
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def check_trace_path(path: Path) -> None:
    """Reject an unsupported trace file type before a run starts (one-line input error)."""
    if path.suffix not in TRACE_SUFFIXES:
        raise InputError(
            f"--trace: unsupported file type {path.suffix!r}; allowed: {', '.join(TRACE_SUFFIXES)}"
        )


def write_trace(trace: pd.DataFrame, path: Path) -> None:
    """Write ``trace`` to ``path`` in the format its suffix names."""
    check_trace_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        trace.to_parquet(path, index=False)
    elif path.suffix == ".csv":
        trace.to_csv(path, index=False)
    else:
        path.write_text(json.dumps(chrome_trace(trace)))
