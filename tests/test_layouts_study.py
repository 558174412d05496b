"""The layouts study (:mod:`simsrv.studies.layouts`): one map per layout, seeds vary players."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from simsrv.figures.layouts import layouts_figure  # noqa: E402
from simsrv.studies import layouts  # noqa: E402


def test_spread_separates_between_layout_and_within_layout_variance():
    table = pd.DataFrame(
        {
            "run": ["r"] * 4,
            "layout": [1, 1, 2, 2],
            "frames_per_s": [100.0, 110.0, 300.0, 320.0],
        }
    )
    row = layouts.spread(table).iloc[0]
    assert row["mean"] == pytest.approx(207.5)
    assert row["between_layouts_sd"] == pytest.approx(pd.Series([105.0, 310.0]).std())
    assert row["within_layout_sd"] == pytest.approx((7.0710678 + 14.142136) / 2)
    assert (row["layout_min"], row["layout_max"]) == (105.0, 310.0)


def test_published_values_are_the_reference_rows_of_each_run():
    paper = layouts.published(("groups-only", "fork-wait"))
    assert paper == {
        ("groups-only", "frames_per_s"): 420.0,
        ("groups-only", "messages_per_frame"): 10.0,
        ("groups-only", "groups_per_frame"): 4.0,
        ("groups-only", "entities_per_group"): 7.0,
        ("fork-wait", "frames_per_s"): 95.0,
        ("fork-wait", "messages_per_frame"): 33.0,
        ("fork-wait", "groups_per_frame"): 9.0,
        ("fork-wait", "entities_per_group"): 8.0,
    }


def test_merged_concentration_areas_slow_the_groups_only_server_down():
    """Layout 1's two areas overlap (219 units apart, radius 320): one crowd and a saturated
    loop; layout 2's are 950 units apart.  Same players' seed, 3 measured s."""
    table = layouts.measure(2, 1, 3.0, runs=("groups-only",), workers=1)
    assert table["hotspot_distance"].tolist() == pytest.approx([219.0, 951.5], abs=1.0)
    merged, apart = table.set_index("layout").loc[[1, 2]].itertuples()
    assert merged.frames_per_s * 2 < apart.frames_per_s
    assert merged.messages_per_frame > 5 * apart.messages_per_frame  # the closed loop
    figure = layouts_figure(table, layouts.published(("groups-only",)))
    assert len(figure.axes) == 4
