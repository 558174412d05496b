"""The kernel's receive softirq on the interrupt CPU (simsrv.platforms.network_path)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simsrv.core.errors import InputError
from simsrv.machine.executor import Machine
from simsrv.metrics.stages import category
from simsrv.pipeline.keep_window import KEEP_ALL
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.simulation import simulate
from simsrv.platforms import network_path
from simsrv.platforms.profile import PLATFORM_DIR, load_platform

ROOT = Path(__file__).resolve().parents[1]
SHORT = ["run.duration_s=0.3", "run.warmup_s=0.1", "machine.cpus=2", "players.count=40"]


def _platform(share: float = 0.5, irq_cpu: int | None = 1):
    base = load_platform("cordeiro2007-xeon")
    return base.model_copy(update={"irq_cpu": irq_cpu, "softirq_share": share})


def test_the_reading_thread_pays_the_rest_of_a_receive():
    platform = _platform(share=0.25)
    thread = network_path.thread_costs_platform(platform)
    net = platform.costs.net_recv_per_message
    assert thread.costs.net_recv_per_message == net * 0.75
    assert network_path.softirq_us(platform) == 0.25 * net
    assert thread.costs.request_per_message == platform.costs.request_per_message


@pytest.mark.parametrize(
    ("irq_cpu", "cpus", "expected"), [(-1, 8, 7), (-8, 8, 0), (-9, 4, 0), (9, 4, 3), (2, 4, 2)]
)
def test_a_negative_interrupt_cpu_counts_from_the_last_and_a_large_one_is_clamped(
    irq_cpu, cpus, expected
):
    assert network_path.interrupt_cpu(_platform(irq_cpu=irq_cpu), cpus) == expected


def test_without_an_interrupt_cpu_nothing_changes():
    platform = _platform(irq_cpu=None)
    assert network_path.thread_costs_platform(platform) is platform
    assert network_path.softirq_us(platform) == 0.0


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("softirq_share", "1.5"),
        ("netdev_max_backlog", "0"),
        ("irq_cpu", "1.5"),
        ("xmit_lock_share", "-0.1"),
    ],
)
def test_the_platform_file_checks_the_interrupt_fields(tmp_path, field, value):
    text = (PLATFORM_DIR / "cordeiro2007-xeon.toml").read_text()
    text = text.replace('name = "cordeiro2007-xeon"', f'name = "x"\n{field} = {value}')
    path = tmp_path / "x.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=field):
        load_platform(str(path))


def _run(tmp_path: Path, platform_file: str, sets: list[str]):
    scenario = load_scenario(
        ROOT / "scenarios/cube-160.toml",
        [*SHORT, f'machine.platform="{platform_file}"', *sets],
    )
    return scenario, simulate(scenario, KEEP_ALL, keep_frames=KEEP_ALL)


def _fifo(arrivals: np.ndarray, cost: float) -> np.ndarray:
    """Each packet's softirq end, first come first served (no backlog limit reached)."""
    ends, last = np.empty(len(arrivals)), -np.inf
    for i, a in enumerate(arrivals):
        last = max(a, last) + cost
        ends[i] = last
    return ends


def test_a_run_never_computes_on_the_interrupt_cpu_during_a_softirq(tmp_path, monkeypatch):
    """A whole run with the interrupt CPU under a worker: every packet the stream brings gets
    its softirq, first come first served, and no computation on that CPU overlaps one; every
    packet is released once its softirq has ended."""
    text = (PLATFORM_DIR / "cordeiro2007-xeon.toml").read_text()
    irq = tmp_path / "irq.toml"
    irq.write_text(
        text.replace(
            "migration_delay_us", "irq_cpu = 1\nsoftirq_share = 0.5\nmigration_delay_us", 1
        )
    )
    seen = []
    add = Machine.add_interrupts

    def recorded(machine, arrivals_us, horizon_us):
        ends = add(machine, arrivals_us, horizon_us)
        seen.append((np.array(arrivals_us), ends))
        return ends

    monkeypatch.setattr(Machine, "add_interrupts", recorded)
    _, run = _run(tmp_path, str(irq), ["server.strategy=abdelkhalek"])
    cost = network_path.softirq_us(load_platform(str(irq)))
    arrivals = np.concatenate([a for a, _ in seen])
    ends = np.concatenate([e for _, e in seen])
    assert len(arrivals) > 100 and np.all(np.diff(arrivals) >= 0)
    np.testing.assert_array_equal(ends, _fifo(arrivals, cost))
    rows = run.trace[(run.trace.cpu == 1) & run.trace.busy]
    assert len(rows) > 0
    starts_us, ends_us = ends - cost, ends
    for start, end in zip(rows.start_s * 1e6, rows.end_s * 1e6, strict=True):
        # the first softirq ending after it starts (times in s round trip: 1e-6 us of slack)
        k = np.searchsorted(ends_us, start + 1e-6, side="right")
        assert k == len(ends_us) or starts_us[k] >= end - 1e-6
    assert run.frames.messages.sum() > 0
    # the softirq time in the measured window [0.1, 0.4) s: the intervals clipped to it
    t0, t1 = 0.1e6, 0.4e6
    inside = np.clip(ends_us, t0, t1) - np.clip(starts_us, t0, t1)
    assert run.softirq_s == pytest.approx(inside.sum() * 1e-6, rel=1e-9)
    assert 0.0 < run.softirq_s < 0.3


def test_a_run_sends_one_reply_at_a_time_through_the_device(tmp_path):
    """A whole run of 8 threads whose replies hold the device's transmit lock for 40 % of a
    send: every machine check holds (no two sections of the lock overlap, each CPU runs one
    thing at a time, every plan's cost is in the trace with the spins aside); senders that
    found the lock held spun on their CPU (busy time, stage 3), never longer than the
    sections queued before them."""
    text = (PLATFORM_DIR / "cordeiro2007-xeon.toml").read_text()
    xmit = tmp_path / "xmit.toml"
    xmit.write_text(text.replace("migration_delay_us", "xmit_lock_share = 0.4\nmigration_delay_us"))
    sets = ["server.strategy=abdelkhalek", "machine.cpus=8", "server.options.threads=8"]
    _, run = _run(tmp_path, str(xmit), sets)
    _, plain = _run(tmp_path, str(PLATFORM_DIR / "cordeiro2007-xeon.toml"), sets)
    assert run.checks and all(run.checks.values())
    assert "lock_exclusive" in run.checks
    spin = run.trace[run.trace["activity"] == "lock_spin"]
    assert len(spin) > 0 and spin["busy"].all()
    per_reply_us = 0.4 * load_platform(str(xmit)).costs.net_send_per_reply
    assert ((spin["end_s"] - spin["start_s"]) * 1e6 <= 7 * per_reply_us + 1e-6).all()
    assert category("lock_spin") == "stage3"  # inside the send
    assert "lock_spin" not in plain.trace["activity"].astype(str).unique()


def test_a_planner_in_python_that_brings_the_device_lock_runs_on_both_engines(tmp_path):
    """bsp-group plans in Python: its first plan names the device lock, which grows the
    machine's lock store while the frame loop holds its state (once a crash: the loop kept
    the old record).  Both engines give the same run, every check holding."""
    from tests.test_engines import _assert_identical

    text = (PLATFORM_DIR / "cordeiro2007-xeon.toml").read_text()
    xmit = tmp_path / "xmit.toml"
    xmit.write_text(
        text.replace("migration_delay_us", "xmit_lock_share = 0.21\nmigration_delay_us")
    )
    sets = ["server.strategy=bsp-group", 'server.options.spawn="clone"']
    _, fast = _run(tmp_path, str(xmit), sets)
    _, slow = _run(tmp_path, str(xmit), [*sets, 'machine.engine="simpy"'])
    _assert_identical(fast, slow)
    assert all(fast.checks.values())
    assert (fast.trace["activity"] == "net_send").sum() > (fast.frames["replies"] > 0).sum()


@pytest.mark.parametrize("engine", ["fast", "simpy"])
def test_the_kernel_drops_packets_when_its_receive_backlog_is_full(engine):
    """Packets faster than the interrupt CPU's softirqs: once more than the backlog wait, the
    kernel drops them (throttled until the queue empties): the FIFO never holds more."""
    from simsrv.machine.engines import ENGINES

    machine = ENGINES.get(engine, "engine")(2, irq_cpu=0, softirq_us=10.0, max_backlog=3)
    ends = machine.add_interrupts(np.arange(0.0, 100.0, 2.0), float("inf"))
    kept = ~np.isnan(ends)
    # 0 is served 0-10; at 8 three wait (2, 4, 6: accepted), at 10 three (4, 6, 8); at 12
    # four would (dropped: throttled); at 50 none waits (10's softirq starts at 50): taken
    assert list(np.arange(0.0, 100.0, 2.0)[kept][:7]) == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 50.0]
    assert list(ends[kept][:7]) == [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0]
    assert np.isnan(ends[6:25]).all()
