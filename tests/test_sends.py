"""The replies' sends through the network device's transmit lock (``xmit_lock_share``): each
reply's device part is a spin section of one lock in every strategy where several threads or
processes send; the send's total cost is unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from simsrv.machine.plan_arrays import COMPUTE, SPIN, PlanArrays
from simsrv.platforms.profile import Costs
from simsrv.strategies import bsp_group
from simsrv.strategies import costs as c
from simsrv.strategies.sends import DEVICE_LOCK
from tests.strategy_harness import execute, floor, frame_of, make_strategy

SEND = {"net_send_per_reply": 10.0}
POSITIONS = floor([(-400 + 100 * i, -300 + 60 * i) for i in range(8)])
MULTI_SENDER = [
    ("abdelkhalek", {"threads": 2, "locking": "none"}),
    ("area-quadrant", {"threads": 2, "stage3": "cyclic"}),
]


def _sends(plan) -> list[tuple[int, int, float]]:
    """The plan's net_send rows as (thread, kind, cost)."""
    code = plan.activities.index("net_send")
    rows = plan.activity == code
    columns = (plan.thread[rows], plan.kind[rows], plan.cost[rows])
    return list(zip(*(column.tolist() for column in columns), strict=True))


def test_two_threads_replies_queue_at_the_device_lock_the_second_spinning():
    """Two threads reply at once (one reply each, 10 us a send, 3 of them holding the device
    lock): both make their system call's own part 0-7; thread0, first in plan order, holds
    the device lock 7-10 while thread1 spins on its CPU, then sends 10-13."""
    strategy = make_strategy(
        "abdelkhalek", POSITIONS[:2], {"threads": 2, "locking": "none"}, 2, SEND,
        {"xmit_lock_share": 0.3},
    )  # fmt: skip
    frame = frame_of([0, 1])
    assert _sends(strategy.plan(frame)) == [(0, COMPUTE, 7.0), (0, SPIN, 3.0), (1, COMPUTE, 7.0),
                                            (1, SPIN, 3.0)]  # fmt: skip
    end_us, trace = execute(strategy, frame, 2)
    assert end_us == 13.0
    rows = trace[trace["activity"].isin(["net_send", "lock_spin"])]
    got = sorted(
        zip(rows["thread"].astype(str), rows["activity"].astype(str), rows["start_s"] * 1e6,
            rows["end_s"] * 1e6, strict=True)
    )  # fmt: skip
    assert got == [
        ("thread0", "net_send", 0.0, 7.0),
        ("thread0", "net_send", 7.0, 10.0),
        ("thread1", "lock_spin", 7.0, 10.0),
        ("thread1", "net_send", 0.0, 7.0),
        ("thread1", "net_send", 10.0, 13.0),
    ]
    without = make_strategy("abdelkhalek", POSITIONS[:2], {"threads": 2, "locking": "none"}, 2,
                            SEND)  # fmt: skip
    assert execute(without, frame, 2)[0] == 10.0  # sends in parallel


@pytest.mark.parametrize(("name", "options"), MULTI_SENDER)
def test_every_multi_sender_strategy_sends_each_reply_through_the_device_lock(name, options):
    """Per reply a computation of the system call's own part then a spin section of the
    device lock; the thread's send total is the lockless one."""
    clients = [0, 1, 2, 3, 4, 5, 6, 7, 2, 5]
    frame = frame_of(clients)
    plain = make_strategy(name, POSITIONS, options, 4, SEND).plan(frame)
    locked = make_strategy(name, POSITIONS, options, 4, SEND, {"xmit_lock_share": 0.25}).plan(frame)
    assert all(kind == COMPUTE for _, kind, _ in _sends(plain))
    sends = _sends(locked)
    spins = [(t, cost) for t, kind, cost in sends if kind == SPIN]
    assert len(spins) == len(np.unique(clients))  # one a reply
    assert {cost for _, cost in spins} == {2.5}
    assert locked.locks[locked.arg[locked.kind == SPIN][0]] == DEVICE_LOCK
    for t in {t for t, _, _ in _sends(plain)}:
        total = sum(cost for u, _, cost in _sends(plain) if u == t)
        assert sum(cost for u, _, cost in sends if u == t) == pytest.approx(total)
    assert locked.cost.sum() == pytest.approx(plain.cost.sum())


@pytest.mark.parametrize("pool", [True, False])
def test_bsp_group_sends_each_processs_replies_through_the_device_lock(pool):
    """The coordinator and every worker process send their own replies, each through the
    device lock (lock id 0 of the plan's locks)."""
    k = c.cost_vector(Costs(net_send_per_reply=10.0, request_per_message=1.0))
    replies = np.array([2.0, 1.0, 0.0, 3.0])  # per process, the coordinator first
    shares = [np.ones(4), np.ones(4), np.zeros(4), replies, np.zeros(4), np.zeros(4), np.ones(4)]
    flags = np.array([3, pool, False, False, False, False], np.int64)
    columns = bsp_group._plan(
        flags, k, False, 0, 4, 4, 0, 4, 0, 4, 0.0, 0.0, 4.0, *shares, np.full(4, 2.0)
    )  # fmt: skip
    plan = PlanArrays(*columns, np.zeros(0, np.int64), (), bsp_group.ACTIVITIES, (),
                      np.zeros(0, np.int64), (DEVICE_LOCK,))  # fmt: skip
    step = 1 if pool else 2
    thread_of = [0, *(step * w - step + 1 for w in (1, 2, 3))]
    expected = []
    for p in np.argsort(thread_of, kind="stable"):
        t, n = thread_of[p], int(replies[p])
        expected += [(t, COMPUTE, 6.0), (t, SPIN, 4.0)] * n if n else [(t, COMPUTE, 0.0)]
    assert _sends(plan) == expected
    assert (plan.arg[plan.kind == SPIN] == 0).all()


def test_a_single_sender_keeps_one_send_computation():
    """The sequential server sends from one thread: nobody else could hold the lock."""
    frame = frame_of([0, 1, 2])
    plain = make_strategy("sequential", POSITIONS, {}, 2, SEND).plan(frame)
    locked = make_strategy("sequential", POSITIONS, {}, 2, SEND, {"xmit_lock_share": 0.5}).plan(
        frame
    )
    assert plain == locked
