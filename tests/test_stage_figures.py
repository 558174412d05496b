"""The stage-breakdown figures draw what their frames say."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from simsrv.figures.stage_breakdown import end_barrier_figure, stage_breakdown_figure  # noqa: E402


def _shares():
    rows = []
    for variant, stage2 in (("sequential", 0.6), ("4 threads", 0.3)):
        for clients in (8, 16):
            for category, share in (
                ("stage2", stage2),
                ("barrier_wait", 0.1),
                ("end_barrier_wait", 0.1),
                ("intra_frame_wait", 0.2),  # derived: must not be counted twice
                ("idle", 1.0 - stage2 - 0.2),
            ):
                rows.append(
                    {
                        "variant": variant,
                        "clients": clients,
                        "seed": 1,
                        "category": category,
                        "share": share,
                    }
                )
    return pd.DataFrame(rows)


def test_stacked_bars_reach_one_and_barrier_waits_stack_together():
    fig = stage_breakdown_figure(_shares())
    ax = fig.axes[0]
    tops = {}
    for patch in ax.patches:
        x = round(patch.get_x(), 6)
        tops[x] = max(tops.get(x, 0.0), patch.get_y() + patch.get_height())
    assert len(tops) == 4  # 2 variants x 2 client counts
    assert all(t == pytest.approx(1.0) for t in tops.values())
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "intra-frame wait (barriers)" in labels and "stage 2 (requests)" in labels


def test_end_barrier_figure_has_one_panel_per_client_count():
    rows = [
        {"variant": v, "clients": c, "seed": 1, "thread": t, "category": k, "share": 0.05}
        for v in ("cyclic slots", "active clients")
        for c in (8, 32)
        for t in ("thread0", "thread1")
        for k in ("internal_barrier_wait", "end_barrier_wait")
    ]
    fig = end_barrier_figure(pd.DataFrame(rows))
    assert [ax.get_title() for ax in fig.axes] == ["8 clients", "32 clients"]
    heights = [p.get_y() + p.get_height() for p in fig.axes[0].patches]
    assert max(heights) == pytest.approx(0.10)
