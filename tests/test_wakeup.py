"""The wake-up latency as a measured distribution (:mod:`simsrv.frame_steps.wakeup`): the
draws, their distribution, the platform fields' refusals and a run that uses it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simsrv.core.errors import InputError
from simsrv.frame_steps.state import WAKES
from simsrv.frame_steps.wakeup import registers, uniform, wakeup_s
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.simulation import simulate


def test_the_uniforms_depend_on_the_seed_and_the_index_only():
    draws = np.array([uniform(7, k) for k in range(20_000)])
    assert ((draws >= 0.0) & (draws < 1.0)).all()
    assert draws.mean() == pytest.approx(0.5, abs=0.01)
    assert np.histogram(draws, 10, (0.0, 1.0))[0].min() > 1_850  # ~2,000 in each tenth
    assert uniform(7, 123) == draws[123] and uniform(8, 123) != draws[123]


def test_each_wake_up_draws_one_quantile_with_equal_probability_and_counts_the_draw():
    quantiles = [1e-6, 2e-6, 5e-6, 40e-6]
    ints, floats = registers(0.0, quantiles, seed=11)
    draws = [wakeup_s(ints, floats) for _ in range(8_000)]
    assert ints[WAKES] == 8_000
    values, counts = np.unique(draws, return_counts=True)
    assert list(values) == quantiles
    assert counts.min() > 1_850 and counts.max() < 2_150
    again_ints, again_floats = registers(0.0, quantiles, seed=11)
    assert [wakeup_s(again_ints, again_floats) for _ in range(50)] == draws[:50]


def test_without_quantiles_the_latency_is_the_constant_and_nothing_is_drawn():
    ints, floats = registers(51e-6, (), seed=3)
    assert [wakeup_s(ints, floats) for _ in range(3)] == [51e-6] * 3
    assert ints[WAKES] == 0


def _platform(tmp_path, lines: str, name: str = "p") -> str:
    source = Path("simsrv/platforms/this-machine-mvdsv.toml").read_text()
    kept = [
        line
        for line in source.splitlines()
        if not line.startswith(("wakeup_latency_us", "wakeup_latency_quantiles_us"))
    ]
    text = "\n".join(kept).replace("[costs]", f"{lines}\n\n[costs]", 1)
    path = tmp_path / f"{name}.toml"  # (platforms are cached by path)
    path.write_text(text)
    return f'machine.platform="{path}"'


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ("wakeup_latency_quantiles_us = [5.0, 3.0]", "non-decreasing"),
        ("wakeup_latency_quantiles_us = [-1.0, 3.0]", "non-decreasing"),
        ("wakeup_latency_us = 5.0\nwakeup_latency_quantiles_us = [5.0]", "set one of the two"),
    ],
)
def test_bad_quantiles_are_refused_in_one_line_naming_the_field(tmp_path, lines, message):
    with pytest.raises(InputError, match=message):
        load_scenario("scenarios/testbed/mvdsv-dm1.toml", [_platform(tmp_path, lines, message)])


def test_a_longer_measured_latency_lets_more_packets_join_each_frame(tmp_path):
    short = ["run.duration_s=1.0", "run.warmup_s=0.2", "players.count=32"]

    def messages_per_frame(lines: str, name: str) -> float:
        scenario = load_scenario(
            "scenarios/testbed/mvdsv-dm1.toml", [*short, _platform(tmp_path, lines, name)]
        )
        out = simulate(scenario)
        return out.frame_digest.messages_read / max(out.frame_digest.frames, 1)

    fast = messages_per_frame("wakeup_latency_quantiles_us = [1.0, 2.0, 3.0]", "fast")
    slow = messages_per_frame("wakeup_latency_quantiles_us = [100.0, 200.0, 300.0]", "slow")
    assert slow > fast * 1.05
