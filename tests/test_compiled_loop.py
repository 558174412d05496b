"""The frame loop (simsrv.frame_steps) gives the same frames whoever plans them and wherever
the packets come from, bit for bit: a strategy's compiled loop (many frames per compiled call)
and its Python ``plan`` (one frame at a time between the compiled steps) give every frame row,
every trace row, the message accounting and the run's end, across the options and workloads
that take the steps' branches (lost packets and their commands, a read limit that leaves
packets queued, senders with several packets in a frame, threads sharing a CPU, SMT and
background load, bandwidth control); a socket large enough never to drop (read in Python)
gives the stream's frames."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simsrv.pipeline.simulation as simulation
from simsrv.pipeline import frame_loop as runner
from simsrv.pipeline.frame_loop import FrameLoop
from simsrv.pipeline.keep_window import KEEP_ALL
from simsrv.pipeline.load import load_scenario

SHORT = ["run.duration_s=1.0", "run.warmup_s=0.2"]


def _runs(overrides: list[str], monkeypatch) -> tuple:
    """The run of ``overrides`` with the strategy's compiled loop and with its Python ``plan``
    only, and the first run's frame loop."""
    scenario = load_scenario(None, [*SHORT, *overrides])
    loops: list[FrameLoop] = []
    init = FrameLoop.__init__

    def recording(self, *args, **kwargs):
        init(self, *args, **kwargs)
        loops.append(self)

    with monkeypatch.context() as patch:
        patch.setattr(FrameLoop, "__init__", recording)
        fast = simulation.simulate(scenario, KEEP_ALL, keep_frames=KEEP_ALL)
    with monkeypatch.context() as patch:
        patch.setattr(FrameLoop, "_kernel_call", lambda self, stream: runner.PYTHON)
        slow = simulation.simulate(scenario, KEEP_ALL, keep_frames=KEEP_ALL)
    return fast, slow, loops[0]


def _assert_same(fast, slow) -> None:
    pd.testing.assert_frame_equal(fast.frames, slow.frames, check_exact=True)
    pd.testing.assert_frame_equal(fast.trace, slow.trace, check_exact=True)
    assert fast.accounting == slow.accounting
    assert (fast.arrived, fast.dropped, fast.end_s) == (slow.arrived, slow.dropped, slow.end_s)


CASES = {
    "abdelkhalek": ["server.strategy=abdelkhalek"],
    "abdelkhalek-unlocked": ["server.strategy=abdelkhalek", "server.options.locking=none"],
    "abdelkhalek-optimized-two-nodes": [
        "server.strategy=abdelkhalek",
        "server.options.locking=region-optimized",
        "server.options.lock_scope=two-nodes",
        "server.options.client_locks=false",
        "server.options.gamestate_share=0",
    ],
    "abdelkhalek-4-cpus": ["server.strategy=abdelkhalek", "machine.cpus=4"],
    "area-quadrant": ["server.strategy=area-quadrant"],
    "area-quadrant-4": ["server.strategy=area-quadrant", "machine.cpus=4"],
    "area-quadrant-serial-stage2": [
        "server.strategy=area-quadrant",
        "server.options.stage2=sequential",
        "server.options.stage3=active",
    ],
    "area-quadrant-serial-stage3": [
        "server.strategy=area-quadrant",
        "server.options.stage3=sequential",
    ],
    "lost-packets": [
        "server.strategy=abdelkhalek",
        "clients.packet_loss=0.2",
        "clients.commands_per_packet=3",
    ],
    "read-limit": ["server.strategy=area-quadrant", "server.max_messages_per_frame=3"],
    "slow-frames": [  # frames longer than a client period: senders with several packets
        "server.strategy=abdelkhalek",
        "machine.costs.request_per_message=350",
        "clients.packet_loss=0.1",
        "clients.commands_per_packet=3",
    ],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_compiled_loop_runs_the_python_plans_frames(case, monkeypatch):
    fast, slow, loop = _runs(CASES[case], monkeypatch)
    _assert_same(fast, slow)
    assert loop.frames > len(fast.frames) / 2  # most frames ran in the strategy's loop
    if case == "slow-frames":  # the case it is there for happened
        assert (fast.frames["replies"] < fast.frames["messages"]).any()
    if case == "read-limit":
        assert (fast.frames["queued"] > 0).any()


@pytest.mark.parametrize(
    "overrides",
    [
        ["server.strategy=abdelkhalek", "server.options.threads=3"],  # two threads on a CPU
        ["server.strategy=area-quadrant", "machine.background=[0.3, 0.1]"],
        [
            "server.strategy=abdelkhalek",
            'machine.platform="abdelkhalek2004-xeon-ht"',
            "machine.cpus=4",
        ],  # SMT: computations at a speed
    ],
)
def test_plans_on_shared_or_slowed_cpus_run_compiled_with_the_same_results(overrides, monkeypatch):
    """Threads sharing a CPU, background load, SMT: the engine runs every plan, so the
    compiled loop runs most frames, and they are the Python loop's."""
    fast, slow, loop = _runs(overrides, monkeypatch)
    _assert_same(fast, slow)
    assert loop.frames > len(fast.frames) / 2


def test_strategies_without_a_compiled_loop_or_with_a_bounded_socket_plan_in_python(
    monkeypatch,
):
    for overrides in (
        ["server.strategy=sequential"],
        ["server.strategy=abdelkhalek", "clients.socket_buffer_messages=8"],
    ):
        fast, slow, loop = _runs(overrides, monkeypatch)
        assert loop.frames == 0
        _assert_same(fast, slow)


def test_bandwidth_control_runs_in_the_compiled_loop(monkeypatch):
    overrides = ["server.strategy=abdelkhalek", "clients.bandwidth_control=true"]
    overrides += ["clients.rate_bytes_per_s=1500"]  # chokes replies
    fast, slow, loop = _runs(overrides, monkeypatch)
    _assert_same(fast, slow)
    assert fast.frames["choked"].sum() > 0
    assert loop.frames > len(fast.frames) / 2


@pytest.mark.parametrize("strategy", ["sequential", "abdelkhalek", "bsp-group"])
def test_a_socket_that_never_drops_gives_the_streams_frames(strategy):
    """The socket source (packets read in Python, as a bounded socket and cluster nodes do)
    and the stream source (released and read in compiled code) run the same frames."""
    sets = [*SHORT, f"server.strategy={strategy}"]
    stream = simulation.simulate(load_scenario(None, sets), KEEP_ALL, keep_frames=KEEP_ALL)
    big = load_scenario(None, [*sets, "clients.socket_buffer_messages=1000000"])
    socket = simulation.simulate(big, KEEP_ALL, keep_frames=KEEP_ALL)
    _assert_same(stream, socket)


@settings(max_examples=6, deadline=None)
@given(
    strategy=st.sampled_from(["abdelkhalek", "area-quadrant"]),
    seed=st.integers(0, 2**20),
    players=st.integers(2, 80),
    loss=st.sampled_from([0.0, 0.05, 0.3]),
    limit=st.sampled_from([0, 1, 4]),
)
def test_any_seed_and_workload_give_the_same_frames(strategy, seed, players, loss, limit):
    overrides = [
        f"server.strategy={strategy}",
        f"run.seed={seed}",
        f"players.count={players}",
        f"clients.packet_loss={loss}",
        f"server.max_messages_per_frame={limit}",
        "run.duration_s=0.4",
    ]
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast, slow, _ = _runs(overrides, monkeypatch)
    _assert_same(fast, slow)
