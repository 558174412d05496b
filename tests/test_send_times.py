"""Replaying a load generator's measured send times (``clients.send_times_file``).

The stream sends client ``c``'s packet of tick ``k`` at ``k / rate + phase_c + lateness``,
the phase and lateness read from the measured table; exact send times, the window alignment
and the cycling, properties over random tables, a frame that reads a measured burst whole,
and one-line refusals of every kind of bad table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.core.errors import InputError
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.result import run
from simsrv.pipeline.seeding import run_streams
from simsrv.pipeline.simulation import build_world
from simsrv.workload.clients import ClientStream
from simsrv.workload.send_times import load_send_times

RATE = 50.0
PERIOD = 1.0 / RATE


def _table(path: Path, due: np.ndarray, late: np.ndarray, first_tick: np.ndarray) -> str:
    """A sends table: client c's ticks first_tick[c] .. + ticks - 1, due[c] the due time of
    its first, late[c, i] its i-th packet's lateness (s)."""
    players, ticks = late.shape
    rows = []
    for c in range(players):
        for i in range(ticks):
            d = due[c] + i * PERIOD
            rows.append((c, int(first_tick[c]) + i, d, d + late[c, i]))
    frame = pd.DataFrame(rows, columns=["client", "tick", "due_s", "sent_s"])
    file = path / "sends.parquet"
    frame.to_parquet(file, index=False)
    return str(file)


def _scenario(file: str, players: int, extra=()):
    return load_scenario(
        None,
        [
            f"players.count={players}",
            f"clients.rate_hz={RATE}",
            "clients.jitter_s=0",
            f'clients.send_times_file="{file}"',
            "run.duration_s=0.4",
            "run.warmup_s=0.2",
            *extra,
        ],
    )


def _sent(scenario, until_s: float) -> np.ndarray:
    rng = run_streams(scenario.run)
    window = (scenario.run.warmup_s, scenario.run.warmup_s + scenario.run.duration_s)
    stream = ClientStream(scenario.clients, build_world(scenario, rng), rng["clients"], window)
    return stream.release_until(until_s)


def test_send_times_are_the_measured_phase_and_lateness(tmp_path):
    late = np.array([[0.001, 0.002, 0.003], [0.0005, 0.0, 0.004]])
    due = np.array([100.003, 100.011])  # client 1's grid 8 ms after client 0's
    file = _table(tmp_path, due, late, np.array([7, 7]))
    scenario = _scenario(file, 2)
    packets = _sent(scenario, 0.5)
    window_tick = int(np.ceil(0.2 / PERIOD))  # 10: the first tick of the measured window
    for p in packets:
        c, k = int(p["client"]), int(p["tick"])
        expected = k * PERIOD + [0.0, 0.008][c] + late[c, (k - window_tick) % 3]
        assert p["sent_s"] == pytest.approx(expected, abs=1e-12)
    assert {int(p["tick"]) for p in packets} >= set(range(20))


def test_a_grid_a_period_later_shifts_the_ticks(tmp_path):
    # client 1 is due 1.5 periods after client 0 at the same tick number: phase 0.5 period,
    # and its measured tick t lands on the shared grid's tick t + 1
    late = np.array([[0.001, 0.002, 0.003], [0.004, 0.005, 0.006]])
    file = _table(tmp_path, np.array([10.0, 10.0 + 1.5 * PERIOD]), late, np.array([3, 3]))
    times = load_send_times(file, 2, RATE)
    assert times.phase_s == pytest.approx([0.0, 0.5 * PERIOD])
    assert times.ticks == 4
    assert times.lateness_s[0].tolist() == pytest.approx([0.001, 0.002, 0.003, 0.0])
    assert times.lateness_s[1].tolist() == pytest.approx([0.0, 0.004, 0.005, 0.006])


@settings(max_examples=25, deadline=None)
@given(
    players=st.integers(1, 6),
    ticks=st.integers(1, 8),
    seed=st.integers(0, 2**32 - 1),
)
def test_replayed_packets_keep_the_stream_order_argument(tmp_path_factory, players, ticks, seed):
    rng = np.random.default_rng(seed)
    late = rng.uniform(0.0, 1.5 * PERIOD, (players, ticks))  # some beyond a period: clipped
    due = 50.0 + rng.uniform(0.0, 3 * PERIOD, players)
    first = rng.integers(0, 3, players)
    file = _table(tmp_path_factory.mktemp("t"), due, late, first)
    times = load_send_times(file, players, RATE)
    assert ((times.phase_s >= 0) & (times.phase_s < PERIOD)).all()
    assert ((times.lateness_s >= 0) & (times.lateness_s < PERIOD)).all()
    packets = _sent(_scenario(file, players), 0.6)
    offset = packets["sent_s"] - packets["tick"] * PERIOD
    assert ((offset >= 0) & (offset < 2 * PERIOD)).all()
    assert (np.diff(packets["arrival_s"]) >= 0).all()
    # each client sends exactly once per tick, in tick order
    for c in range(players):
        mine = packets[packets["client"] == c]
        assert (np.diff(np.sort(mine["tick"])) == 1).all()


def test_a_measured_burst_is_read_in_one_frame(tmp_path):
    # eight clients due at the same instant, all sent 3 ms late together: each tick's eight
    # packets arrive together and the server reads them in one frame
    players = 8
    late = np.full((players, 5), 0.003)
    file = _table(tmp_path, np.full(players, 20.0), late, np.zeros(players, int))
    result = run(_scenario(file, players, ["run.duration_s=1.0"]))
    assert result.summary["messages_per_frame"] == pytest.approx(players)


def _refused(file: str, players: int = 2, extra=()) -> str:
    with pytest.raises(InputError) as error:
        _scenario(file, players, extra)
    line = str(error.value)
    assert "\n" not in line
    return line


def test_bad_tables_are_refused_in_one_line(tmp_path):
    good = _table(tmp_path, np.array([1.0, 1.0]), np.zeros((2, 3)), np.array([0, 0]))
    assert "no such file" in _refused(str(tmp_path / "missing.parquet"))
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"not parquet at all")
    assert "not a readable Parquet table" in _refused(str(junk))
    frame = pd.read_parquet(good)
    frame.drop(columns=["due_s"]).to_parquet(tmp_path / "nodue.parquet")
    assert "lacks the column(s) due_s" in _refused(str(tmp_path / "nodue.parquet"))
    assert "players.count = 3 needs exactly 0..2" in _refused(good, players=3)
    pd.concat([frame, frame.iloc[:1]]).to_parquet(tmp_path / "twice.parquet")
    assert "same tick twice" in _refused(str(tmp_path / "twice.parquet"))
    frame.assign(due_s=frame["due_s"] * 2).to_parquet(tmp_path / "rate.parquet")
    assert "clients.rate_hz = 50 needs" in _refused(str(tmp_path / "rate.parquet"))
    frame.iloc[:0].to_parquet(tmp_path / "empty.parquet")
    assert "no rows" in _refused(str(tmp_path / "empty.parquet"))
    frame.assign(sent_s=np.nan).to_parquet(tmp_path / "nan.parquet")
    assert "missing or infinite" in _refused(str(tmp_path / "nan.parquet"))
    for line in (
        _refused(str(tmp_path / "missing.parquet")),
        _refused(str(junk)),
    ):
        assert line.startswith("clients.send_times_file: ")


def test_drawn_timing_beside_a_replay_is_refused(tmp_path):
    good = _table(tmp_path, np.array([1.0, 1.0]), np.zeros((2, 3)), np.array([0, 0]))
    line = _refused(good, extra=["clients.jitter_s=0.001"])
    assert line.startswith("clients.send_times_file: needs clients.jitter_s = 0")
    line = _refused(good, extra=["clients.hosts=1"])
    assert "clients.send_times_file: needs clients.hosts = 0" in line


def test_the_cli_refuses_a_bad_table_with_exit_2(tmp_path):
    completed = subprocess.run(
        [
            sys.executable, "-m", "simsrv", "run", "--set", "clients.jitter_s=0",
            "--set", f'clients.send_times_file="{tmp_path / "none.parquet"}"',
        ],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert completed.returncode == 2
    assert completed.stderr.strip().count("\n") == 0
    assert "clients.send_times_file: no such file" in completed.stderr


def test_the_scenario_layout_omits_an_unset_replay():
    assert "send_times_file" not in load_scenario(None, []).to_dict()["clients"]
