"""The compiled frame loop (simsrv.compiled_loop) runs the same frames as the Python loop, bit
for bit: every frame row, every trace row, the message accounting and the run's end, on each
strategy that has one, across the options and workloads that take its different branches
(lost packets and their commands, a read limit that leaves packets queued, senders with
several packets in a frame, threads sharing a CPU, SMT and background load)."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simsrv.simulation as simulation
from simsrv.compiled_loop.runner import CompiledLoop
from simsrv.keep_window import KEEP_ALL
from simsrv.scenario.load import load_scenario

SHORT = ["run.duration_s=1.0", "run.warmup_s=0.2"]


def _runs(overrides: list[str], monkeypatch) -> tuple:
    """The run of ``overrides`` with the compiled loop and without it, and the loop."""
    scenario = load_scenario(None, [*SHORT, *overrides])
    loops: list[CompiledLoop | None] = []
    create = CompiledLoop.create.__func__

    def recording(cls, *args):
        loops.append(create(cls, *args))
        return loops[-1]

    with monkeypatch.context() as patch:
        patch.setattr(CompiledLoop, "create", classmethod(recording))
        fast = simulation.simulate(scenario, KEEP_ALL, keep_frames=KEEP_ALL)
    with monkeypatch.context() as patch:
        patch.setattr(CompiledLoop, "create", classmethod(lambda cls, *args: None))
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
def test_the_compiled_loop_runs_the_python_loops_frames(case, monkeypatch):
    fast, slow, loop = _runs(CASES[case], monkeypatch)
    _assert_same(fast, slow)
    assert loop is not None
    assert loop.frames > len(fast.frames) / 2  # most frames ran compiled
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
def test_plans_on_shared_or_slowed_cpus_run_compiled_with_the_same_results(
    overrides, monkeypatch
):
    """Threads sharing a CPU, background load, SMT: the engine runs every plan, so the
    compiled loop runs most frames, and they are the Python loop's."""
    fast, slow, loop = _runs(overrides, monkeypatch)
    _assert_same(fast, slow)
    assert loop.frames > len(fast.frames) / 2


def test_strategies_without_a_compiled_loop_or_outside_it_get_none(monkeypatch):
    for overrides in (
        ["server.strategy=sequential"],
        ["server.strategy=abdelkhalek", "clients.socket_buffer_messages=8"],
        ["server.strategy=abdelkhalek", "clients.bandwidth_control=true"],
    ):
        fast, slow, loop = _runs(overrides, monkeypatch)
        assert loop is None
        _assert_same(fast, slow)


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
