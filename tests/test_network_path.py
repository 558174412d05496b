"""The kernel's receive softirq on the interrupt CPU (simsrv.platforms.network_path, issue 40)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from simsrv.core.errors import InputError
from simsrv.pipeline.keep_window import KEEP_ALL
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.simulation import offered_rate, simulate
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


def test_the_softirq_load_lands_on_the_interrupt_cpu_only():
    platform = _platform(share=0.5, irq_cpu=1)
    load = 1000.0 * 0.5 * platform.costs.net_recv_per_message * 1e-6
    assert network_path.with_softirq(platform, (0.1,), 3, 1000.0) == (0.1, load, 0.0)


@pytest.mark.parametrize(
    ("irq_cpu", "cpus", "expected"), [(-1, 8, 7), (-8, 8, 0), (-9, 4, 0), (9, 4, 3), (2, 4, 2)]
)
def test_a_negative_interrupt_cpu_counts_from_the_last_and_a_large_one_is_clamped(
    irq_cpu, cpus, expected
):
    assert network_path.interrupt_cpu(_platform(irq_cpu=irq_cpu), cpus) == expected


def test_an_overloaded_interrupt_cpu_keeps_a_thousandth_for_the_server():
    platform = _platform(share=1.0, irq_cpu=0)
    assert network_path.with_softirq(platform, (0.5,), 2, 1e9) == (network_path.MAX_LOAD, 0.0)


def test_without_an_interrupt_cpu_nothing_changes():
    platform = _platform(irq_cpu=None)
    assert network_path.thread_costs_platform(platform) is platform
    assert network_path.with_softirq(platform, (0.2,), 2, 5000.0) == (0.2,)
    assert network_path.softirq_us(platform) == 0.0


def test_the_platform_file_checks_the_share():
    text = (PLATFORM_DIR / "cordeiro2007-xeon.toml").read_text()
    text = text.replace('name = "cordeiro2007-xeon"', 'name = "x"\nsoftirq_share = 1.5')
    path = Path(__import__("tempfile").mkdtemp()) / "x.toml"
    path.write_text(text)
    with pytest.raises(InputError, match="softirq_share"):
        load_platform(str(path))


def _run(tmp_path: Path, platform_file: str, sets: list[str]):
    scenario = load_scenario(
        ROOT / "scenarios/cube-160.toml",
        [*SHORT, f'machine.platform="{platform_file}"', *sets],
    )
    return scenario, simulate(scenario, KEEP_ALL, keep_frames=KEEP_ALL)


def test_a_run_with_an_interrupt_cpu_is_the_run_with_its_softirq_as_background_load(tmp_path):
    """The platform's interrupt CPU takes the softirq's mean load as background and the thread
    pays the rest of each receive: the same trace, to the bit, as the plain platform with that
    background and that receive cost set by hand."""
    text = (PLATFORM_DIR / "cordeiro2007-xeon.toml").read_text()
    irq = tmp_path / "irq.toml"
    irq.write_text(
        text.replace(
            "migration_delay_us", "irq_cpu = 1\nsoftirq_share = 0.5\nmigration_delay_us", 1
        )
    )
    scenario, with_irq = _run(tmp_path, str(irq), [])
    platform = load_platform(str(irq))
    load = network_path.softirq_load(platform, offered_rate(scenario))
    assert 0.0 < load < 1.0
    thread = network_path.thread_costs_platform(platform).costs.net_recv_per_message
    _, by_hand = _run(
        tmp_path,
        "cordeiro2007-xeon",
        [f"machine.background=[0.0, {load!r}]", f"machine.costs.net_recv_per_message={thread!r}"],
    )
    pd.testing.assert_frame_equal(with_irq.frames, by_hand.frames, check_exact=True)
    pd.testing.assert_frame_equal(with_irq.trace, by_hand.trace, check_exact=True)
    _, plain = _run(tmp_path, "cordeiro2007-xeon", [])
    assert not plain.frames.equals(with_irq.frames)  # the mechanism does something
