"""BSP-group: lock-free partition of the frame, parallel speed-up, and the OS process model."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.machine import Machine
from simsrv.metrics.timeline import parallel_fraction
from simsrv.pipeline.load import load_scenario
from simsrv.platforms.profile import Costs, load_platform
from simsrv.strategies import STRATEGIES, StrategyContext
from simsrv.strategies.grouping.balancers import BALANCERS
from simsrv.strategies.grouping.groups import frame_groups
from simsrv.workload.frame import FrameWorkload
from simsrv.workload.messages import MESSAGE_DTYPE
from simsrv.world.proximity import Neighbours, neighbour_lists


class FakeWorld:
    """Just what the strategy asks of a world: neighbour lists at tick 0."""

    def __init__(self, neighbours: Neighbours) -> None:
        self._neighbours = neighbours

    def keep_neighbours(self, ticks: int) -> None:
        pass

    def neighbours(self, tick: int) -> Neighbours:
        return self._neighbours


def _frame(clients: list[int], neighbours: Neighbours, entities: int) -> FrameWorkload:
    messages = np.zeros(len(clients), dtype=MESSAGE_DTYPE)
    messages["client"] = clients
    messages["commands"] = 1
    messages["range_count"] = neighbours.counts[clients]
    c = np.array(clients, dtype=np.int32)
    return FrameWorkload(
        0,
        0.0,
        messages,
        c,
        np.zeros(len(c), np.int32),
        np.zeros(len(c), np.int32),
        0,
        False,
        entities,
        len(c),
        int(messages["range_count"].sum()),
        0,
        0,
    )


def _strategy(options: dict, cpus: int, costs: dict, neighbours: Neighbours, **platform):
    """bsp-group with only ``costs`` non-zero; the coordinator's action lists off unless the
    options set ``action_list_share`` (tested on its own below)."""
    options = {"action_list_share": 0.0, **options}
    scenario = load_scenario(None, ["server.strategy=bsp-group", f"machine.cpus={cpus}"])
    base = load_platform("cordeiro2007-xeon")
    zero = dict.fromkeys(Costs.model_fields, 0.0)
    plat = base.model_copy(
        update={"costs": Costs(**{**zero, **costs}), "cow_base_pages": 0, **platform}
    )
    kind = STRATEGIES.get("bsp-group", "server.strategy")
    context = StrategyContext(scenario, plat, cpus, FakeWorld(neighbours), np.random.default_rng(0))
    return kind.create(kind.options(**options), context)


def _isolated(players: int) -> Neighbours:
    """Players far apart: every group is one player."""
    positions = np.column_stack([np.arange(players) * 1000.0, np.zeros(players), np.zeros(players)])
    return neighbour_lists(positions, np.zeros((0, 3)), 256.0)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    senders=st.integers(1, 60),
    processes=st.integers(1, 8),
    balancer=st.sampled_from(
        ["lpt", "list", "round-robin", "largest-differencing", "graph-partition"]
    ),
)
def test_no_entity_in_two_processes_and_no_interaction_across_them(
    seed, senders, processes, balancer
):
    rng = np.random.default_rng(seed)
    players = 80
    nb = neighbour_lists(rng.uniform(0, 1500, (players, 3)), rng.uniform(0, 1500, (4, 3)), 256.0)
    clients = rng.integers(0, players, senders)
    groups = frame_groups(clients, np.zeros(senders, dtype=np.int64), lambda t: nb)
    initial = [1.0] + [0.0] * (min(processes, groups.count) - 1 if groups.count else 0)
    assignment = BALANCERS.get(balancer, "b")(groups.sizes.astype(float), initial or [1.0], groups)
    process_of = dict(
        zip(groups.entities.tolist(), assignment[groups.entity_group].tolist(), strict=True)
    )  # a function: each entity has exactly one process
    assert len(process_of) == len(groups.entities)
    for c in clients.tolist():
        for b in nb.indices[nb.indptr[c] : nb.indptr[c + 1]].tolist():
            assert process_of[b] == process_of[c]  # every entity c may touch is local


@pytest.mark.parametrize("cpus", [1, 2, 4])
def test_zero_os_costs_divisible_work_gives_n_fold_parallel_phase(cpus):
    nb = _isolated(8)
    frame = _frame(list(range(8)), nb, 8)
    strategy = _strategy(
        {"spawn": "clone", "coordinator_load": 0.0}, cpus, {"request_per_message": 100.0}, nb
    )
    machine = Machine(cpus)
    end = machine.execute(strategy.plan(frame), 0, 0.0)
    assert end * 1e6 == pytest.approx(800.0 / cpus)  # 8 equal groups over n processes


def test_fork_with_default_affinity_never_overlaps_coordinator_and_worker():
    nb = _isolated(6)
    frame = _frame(list(range(6)), nb, 6)
    costs = {"request_per_message": 100.0, "fork": 50.0, "exit_teardown": 80.0, "wait": 5.0}
    strategy = _strategy(
        {"spawn": "fork", "affinity": "os-default", "reap": "wait"},
        2,
        costs,
        nb,
        migration_delay_us=10_000.0,
    )
    machine = Machine(2)
    end = machine.execute(strategy.plan(frame), 0, 0.0)
    trace = machine.trace.to_frame()
    assert parallel_fraction(trace, 2, 0.0, end) == 0.0
    assert set(trace["cpu"]) == {0}  # the child ran on the parent's CPU
    # serial: fork + child's 3 groups + teardown + parent's 3 groups + wait
    assert end * 1e6 == pytest.approx(50 + 300 + 80 + 300 + 5)


def test_wait_and_nowait_differ_by_exactly_the_teardown():
    nb = _isolated(6)
    frame = _frame(list(range(6)), nb, 6)
    costs = {"request_per_message": 100.0, "clone": 50.0, "exit_teardown": 80.0, "wait": 5.0}
    ends = {}
    for reap in ("wait", "nowait"):
        strategy = _strategy(
            {"spawn": "clone", "reap": reap, "coordinator_load": 0.0}, 2, costs, nb
        )
        ends[reap] = Machine(2).execute(strategy.plan(frame), 0, 0.0) * 1e6
    # the worker (3 groups, 300 us) finishes at 350 after the clone; coordinator at 350 too
    assert ends["nowait"] == pytest.approx(50 + 300 + 5)
    assert ends["wait"] - ends["nowait"] == pytest.approx(80.0)


def test_copy_on_write_charges_pages_written_times_cost_in_the_worker():
    # 6 isolated senders, LPT with no coordinator bias: 3 clients on each process
    nb = _isolated(6)
    frame = _frame(list(range(6)), nb, 6)
    costs = {"request_per_message": 100.0, "clone": 50.0, "cow_per_page": 2.5}
    strategy = _strategy(
        {"spawn": "clone", "coordinator_load": 0.0},
        2,
        costs,
        nb,
        cow_pages_per_client=4.0,
        cow_base_pages=12,
    )
    machine = Machine(2)
    end = machine.execute(strategy.plan(frame), 0, 0.0)
    trace = machine.trace.to_frame()
    cow = trace[trace["activity"] == "copy_on_write"]
    assert set(cow["thread"]) == {"worker1"}  # only the forked worker faults
    assert set(cow["cpu"]) == {1}  # on its own CPU
    pages = 12 + 4 * 3  # base pages + pages per client x the worker's 3 clients
    assert (cow["end_s"] - cow["start_s"]).sum() * 1e6 == pytest.approx(pages * 2.5)
    # the worker's faults come before its 3 packets, after the clone on the coordinator
    assert end * 1e6 == pytest.approx(50 + pages * 2.5 + 300)


@pytest.mark.parametrize("share", [0.0, 0.25, 1.0])
def test_action_lists_move_their_share_of_request_work_to_the_coordinator(share):
    # 8 isolated senders, 100 us of request work each, 2 CPUs, no coordinator bias: the
    # coordinator builds every packet's action list (share x 800 us) before the clone, then
    # each process runs its 4 packets' remaining (1 - share) x 100 us.
    nb = _isolated(8)
    frame = _frame(list(range(8)), nb, 8)
    strategy = _strategy(
        {"spawn": "clone", "coordinator_load": 0.0, "action_list_share": share},
        2,
        {"request_per_message": 100.0},
        nb,
    )
    machine = Machine(2)
    end = machine.execute(strategy.plan(frame), 0, 0.0)
    trace = machine.trace.to_frame()
    work = (trace["end_s"] - trace["start_s"]) * 1e6
    lists = work[trace["activity"] == "action_lists"]
    assert float(lists.sum()) == pytest.approx(share * 800.0)
    assert set(trace.loc[trace["activity"] == "action_lists", "thread"]) <= {"coordinator"}
    # request work is conserved: what the coordinator builds, no process repeats
    assert float(lists.sum() + work[trace["activity"] == "request"].sum()) == pytest.approx(800.0)
    assert end * 1e6 == pytest.approx(share * 800.0 + (1.0 - share) * 400.0)
    assert parallel_fraction(trace, 2, 0.0, end) == pytest.approx(
        (1.0 - share) * 400.0 / (share * 800.0 + (1.0 - share) * 400.0)
    )


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    senders=st.integers(1, 50),
    processes=st.integers(1, 6),
    pages_per_client=st.sampled_from([0.0, 4.0, 2.5]),
)
def test_process_shares_are_the_bincounts_of_the_frames_packets_replies_and_entities(
    seed, senders, processes, pages_per_client
):
    """Each process's totals (compiled, one pass) equal numpy's bincount of its packets,
    replies and entities bit for bit, with repeated clients and a subset of them replied."""
    from simsrv.strategies.bsp_group import _shares

    rng = np.random.default_rng(seed)
    players = 60
    nb = neighbour_lists(rng.uniform(0, 1500, (players, 3)), rng.uniform(0, 1500, (3, 3)), 256.0)
    clients = rng.integers(0, players, senders)
    messages = np.zeros(senders, dtype=MESSAGE_DTYPE)
    messages["client"] = clients
    messages["commands"] = rng.integers(1, 4, senders)
    messages["range_count"] = nb.counts[clients]
    unique = np.unique(clients)
    replied = np.sort(rng.choice(unique, rng.integers(0, len(unique) + 1), replace=False))
    visible = rng.integers(0, 40, len(replied)).astype(np.int32)
    rooms = rng.integers(0, 9, len(replied)).astype(np.int32)
    frame = FrameWorkload(0, 0.0, messages, replied, visible, rooms, 0, False, players, 0, 0, 0, 0)
    groups = frame_groups(clients, np.zeros(senders, dtype=np.int64), lambda t: nb)
    assignment = rng.integers(0, processes, groups.count)
    share = _shares(frame, groups, assignment, processes, pages_per_client, 3)

    def count(index, values=None):
        return np.bincount(index, values, minlength=processes).astype(float)

    on_message = assignment[groups.message_group]
    on_reply = assignment[groups.entity_group[np.searchsorted(groups.entities, replied)]]
    _, first = np.unique(clients, return_index=True)
    expected = [
        count(on_message),
        count(on_message, messages["commands"]),
        count(on_message, messages["range_count"]),
        count(on_reply),
        count(on_reply, visible),
        count(on_reply, rooms),
        count(assignment[groups.entity_group]),
        count(on_message[first]) * pages_per_client + 3,
    ]
    for got, want in zip(share, expected, strict=True):
        assert got.tolist() == want.tolist()
