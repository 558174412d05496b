"""The testbed's figure draws every measured condition, whatever the campaign holds."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from simsrv.figures import testbed as figure


def campaign(conditions: list[dict], repeats: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A campaign's runs (``config.*``, measured quantities) and a model off by 10 %."""
    rows, model = [], []
    for c in conditions:
        for seed in range(1, repeats + 1):
            label = f"{c['map']}-n{c['clients']}-{c['phases']}-q{c.get('quota')}-s{seed}"
            measured = {
                "frames_per_s": 100.0 * c["clients"] + seed,
                "messages_per_frame": 1.0 + 0.01 * c["clients"],
                "replies_per_s": 77.0 * c["clients"],
                "server_cpu_utilization": 0.005 * c["clients"],
                "reply_ratio": 1.0,
            }
            rows.append(
                {
                    "label": label,
                    "role": "prediction",
                    "question": "q",
                    "config.clients": c["clients"],
                    "config.map": c["map"],
                    "config.rate_hz": 77.0,
                    "config.phases": c["phases"],
                    "config.quota_us": c.get("quota", np.nan),
                    "config.period_us": 20_000,
                    **measured,
                }
            )
            model.append(
                {
                    "label": label,
                    "role": "prediction",
                    "question": "q",
                    "model.frames_per_s": 1.1 * measured["frames_per_s"],
                    "model.messages_per_frame": 0.9 * measured["messages_per_frame"],
                    "model.replies_per_s": measured["replies_per_s"],
                    "model.busy_fraction": measured["server_cpu_utilization"],
                    "model.reply_ratio": 1.0,
                }
            )
    return pd.DataFrame(rows), pd.DataFrame(model)


def drawn_clients(ax) -> list[float]:
    """The client counts of every point in a panel drawn against clients (each series' data
    line, real and model, not its error bars)."""
    return sorted(x for bars in ax.containers for x in bars.lines[0].get_xdata())


@pytest.mark.parametrize(
    "conditions",
    [
        # a user's own campaign: no dm1 series at 77 Hz, a quota series, one lone condition
        [
            {"map": "dm3", "clients": 8, "phases": "step"},
            {"map": "dm3", "clients": 24, "phases": "step"},
            {"map": "e1m2", "clients": 40, "phases": "independent", "quota": 1000},
            {"map": "e1m2", "clients": 80, "phases": "independent", "quota": 1000},
            {"map": "dm6", "clients": 12, "phases": "hosts:3"},
        ],
        [{"map": "dm1", "clients": 16, "phases": "independent"}],
    ],
)
def test_every_condition_is_drawn_real_and_model(conditions):
    measured, model = campaign(conditions)
    fig = figure.testbed_figure(measured, model)
    ax_fps = fig.axes[0]
    expected = sorted(c["clients"] for c in conditions for _ in ("real", "model"))
    assert drawn_clients(ax_fps) == expected
    ax_curve = fig.axes[3]
    assert sum(len(c.get_offsets()) for c in ax_curve.collections) == 2 * len(conditions)
    assert len(fig.legends[0].get_texts()) == len({(c["map"], c["phases"]) for c in conditions}) + 2


def test_repeats_are_one_point_with_their_mean_and_range():
    measured, model = campaign([{"map": "dm2", "clients": 16, "phases": "step"}], repeats=3)
    points = figure.condition_points(measured, model)
    assert len(points) == 1 and points["repeats"].iloc[0] == 3
    row = points.iloc[0]
    assert row["real.frames_per_s"] == pytest.approx(1602.0)  # seeds add 1, 2, 3
    assert (row["real.frames_per_s.low"], row["real.frames_per_s.high"]) == (1601.0, 1603.0)
    assert row["model.frames_per_s"] == pytest.approx(1.1 * 1602.0)
