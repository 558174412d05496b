"""Measured send times: the clients' packets leave when a real load generator sent them.

A real load generator is not the ideal open-loop client of :mod:`simsrv.workload.clients`:
when its CPU is busy or descheduled, every client whose packet is due waits, and the packets
leave together once it runs again.  The lateness is then correlated across clients, and the
server sees bursts that independent draws of jitter never make (at 128 clients and 125 Hz the
testbed's load generator sends a median 9 packets per millisecond and a 90th percentile of 60,
for a mean of 16).  To predict the server under the input it really got, a scenario can replay
the send times a testbed run recorded (its ``sends.parquet``, :mod:`simsrv.testbed.run`):
``clients.send_times_file``.

The table has one row per packet sent: ``client`` (0 .. N-1), ``tick`` (the client's frame
counter), ``due_s`` (when the load generator meant to send it: a grid of one client period
per client) and ``sent_s`` (when it did), both on one clock.  From it:

* each client's **phase**: its due grid's offset from the earliest client's, folded into one
  client period (a client whose grid lies a whole period later has its ticks shifted by one, so
  that packets due together in the measurement are due together in the model);
* each client's **lateness** at each measured tick, ``sent_s - due_s`` (s), at least 0 and
  below one client period (the stream's ordering argument: a packet of tick ``k`` leaves in
  ``[k, k + 2)`` periods; the testbed's largest lateness is well below one period).

The model's client ``c`` then sends its packet of tick ``k`` at ``k / rate + phase_c +
lateness(c, k)``, the measured ticks replayed from the start of the run's measured window
(model tick ``k`` takes the measured grid's tick ``(k - window_tick) mod ticks``), so the
model's measured window sees the measurement's lateness in order; the warm-up and a run
longer than the measurement see it cycled.  Positions and everything the packets carry stay
the model's.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from simsrv.core.errors import InputError

FIELD = "clients.send_times_file"
COLUMNS = ("client", "tick", "due_s", "sent_s")
PERIOD_RTOL = 1e-6
"""How closely the due grid's step must equal ``1 / clients.rate_hz`` (relative)."""
MAX_CELLS = 50_000_000
"""Most (client, tick) cells a replay holds (400 MB of lateness)."""


@dataclass(frozen=True)
class SendTimes:
    """A measured send schedule: ``phase_s`` (players,) in ``[0, period_s)``, and
    ``lateness_s`` (players, ticks): column ``i`` holds every client's lateness at the
    ``i``-th measured tick of the shared grid (0 where a client sent nothing then)."""

    period_s: float
    phase_s: np.ndarray
    lateness_s: np.ndarray

    @property
    def ticks(self) -> int:
        """Measured ticks replayed."""
        return self.lateness_s.shape[1]

    def lateness(self, tick: int, window_tick: int) -> np.ndarray:
        """(players,) lateness of every client's packet of model ``tick`` (s): the measured
        ticks replayed from model tick ``window_tick`` on, cycled."""
        return self.lateness_s[:, (tick - window_tick) % self.ticks]


def load_send_times(path: str, players: int, rate_hz: float) -> SendTimes:
    """The :class:`SendTimes` of ``path`` for ``players`` clients at ``rate_hz``, or one
    :class:`InputError` line naming :data:`FIELD`."""
    resolved = Path(path).resolve()
    if not resolved.is_file():
        raise InputError(f"{FIELD}: no such file: {path}")
    return _load(str(resolved), resolved.stat().st_mtime_ns, players, float(rate_hz))


@lru_cache(maxsize=8)
def _load(path: str, _mtime_ns: int, players: int, rate_hz: float) -> SendTimes:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as error:  # any unreadable file is one line
        raise InputError(f"{FIELD}: {path} is not a readable Parquet table ({error})") from None
    missing = [c for c in COLUMNS if c not in table.column_names]
    if missing:
        raise InputError(
            f"{FIELD}: {path} lacks the column(s) {', '.join(missing)}; needed: "
            f"{', '.join(COLUMNS)} (a testbed run's sends.parquet)"
        )
    try:
        client = np.asarray(table.column("client").to_numpy(), dtype=np.int64)
        tick = np.asarray(table.column("tick").to_numpy(), dtype=np.int64)
        due = np.asarray(table.column("due_s").to_numpy(), dtype=np.float64)
        sent = np.asarray(table.column("sent_s").to_numpy(), dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise InputError(f"{FIELD}: {path} has a non-numeric column ({error})") from None
    period = 1.0 / rate_hz
    if len(client) == 0:
        raise InputError(f"{FIELD}: {path} has no rows")
    if not (np.isfinite(due).all() and np.isfinite(sent).all()):
        raise InputError(f"{FIELD}: {path} has a missing or infinite due_s or sent_s")
    present = np.unique(client)
    if present[0] != 0 or present[-1] != players - 1 or len(present) != players:
        raise InputError(
            f"{FIELD}: {path} has clients {present[0]}..{present[-1]} ({len(present)} of "
            f"them); players.count = {players} needs exactly 0..{players - 1}"
        )
    order = np.lexsort((tick, client))
    client, tick, due, sent = client[order], tick[order], due[order], sent[order]
    starts = np.searchsorted(client, np.arange(players))
    counts = np.diff(np.r_[starts, len(client)])
    same = client[1:] == client[:-1]
    if (same & (tick[1:] <= tick[:-1])).any():
        raise InputError(f"{FIELD}: {path} has a client with the same tick twice")
    steps = np.diff(due)[same] / np.diff(tick)[same]
    if len(steps) and not np.allclose(steps, period, rtol=PERIOD_RTOL, atol=0.0):
        raise InputError(
            f"{FIELD}: {path} has due times {float(np.median(steps)):.9g} s per tick apart, "
            f"clients.rate_hz = {rate_hz:g} needs {period:.9g} s"
        )
    # every client's due grid, due = base + tick * period, against the earliest one: a
    # phase within one period and a shift of whole ticks onto a grid shared by all clients
    base = due[starts] - tick[starts] * period
    offset = base - base.min()
    shift = np.floor(offset / period).astype(np.int64)
    phase = np.clip(offset - shift * period, 0.0, np.nextafter(period, 0.0))
    shared_tick = tick + np.repeat(shift, counts)
    column = shared_tick - shared_tick.min()
    if (int(column.max()) + 1) * players > MAX_CELLS:
        raise InputError(
            f"{FIELD}: {path} spans {int(column.max()) + 1} ticks for {players} clients; "
            f"at most {MAX_CELLS} (client, tick) cells"
        )
    lateness = np.zeros((players, int(column.max()) + 1))
    lateness[client, column] = np.clip(sent - due, 0.0, np.nextafter(period, 0.0))
    return SendTimes(period, phase, lateness)
