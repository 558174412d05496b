"""The where-the-time-goes figure: parts of busy time and moments, beside the papers."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from simsrv.figures.time_split import PARTS, part_shares, time_split_figure  # noqa: E402


def test_part_shares_leave_out_idle_and_waits_and_put_the_unknown_in_os():
    shares = part_shares(
        {
            "idle": 5.0,
            "barrier_wait": 3.0,
            "world": 1.0,
            "request": 4.0,
            "net_recv": 1.0,
            "net_send": 1.0,
            "teardown": 2.0,
            "something_new": 1.0,  # an activity of no part counts as os
        }
    )
    assert set(shares) == set(PARTS)
    assert sum(shares.values()) == pytest.approx(1.0)
    assert shares["world"] == pytest.approx(0.1)
    assert shares["network"] == pytest.approx(0.2)
    assert shares["os"] == pytest.approx(0.3)
    assert shares["grouping"] == 0.0


def test_the_figure_stacks_each_run_to_one_and_marks_the_published_all_busy_share():
    parts = pd.DataFrame(
        [
            {"run": run, "part": part, "share": share}
            for run in ("sequential", "clone-nowait")
            for part, share in part_shares({"world": 1.0, "request": 3.0, "teardown": 1.0}).items()
        ]
    )
    moments = pd.DataFrame(
        [
            {"run": "clone-nowait", "moment": m, "share": s}
            for m, s in (("overlap", 0.2), ("sequential", 0.3), ("parallel", 0.4), ("tail", 0.1))
        ]
    )
    fig = time_split_figure(parts, moments, {"clone-nowait": 0.5565}, "title")
    left, right = fig.axes
    model_bar = sum(p.get_height() for p in left.patches if abs(p.get_x() + 0.3) < 1e-9)
    assert model_bar == pytest.approx(1.0)
    texts = " ".join(t.get_text() for t in right.texts)
    assert "model 60.0%" in texts and "paper 55.65%" in texts  # moments 1 + 3
    assert [t.get_text() for t in left.get_xticklabels()][1].startswith("papers")
