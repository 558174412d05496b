"""The comparison figures are drawn from the tables they claim to show."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from simsrv.figures.comparison import comparison_figures, save_figures  # noqa: E402
from simsrv.figures.load_balance import load_balance_figure  # noqa: E402
from simsrv.figures.style import (  # noqa: E402
    ACTIVITY_COLOURS,
    CATEGORY_FALLBACK,
    STRATEGY_COLOURS,
    activity_colour,
    strategy_colour,
)
from simsrv.figures.throughput import throughput_figure  # noqa: E402
from simsrv.pipeline import result as result_module  # noqa: E402
from simsrv.sweep import compare  # noqa: E402

TINY = ["run.duration_s=0.15", "run.warmup_s=0.05"]


@pytest.fixture(scope="module")
def results():
    return compare(
        "scenarios/cordeiro2007/clone-nowait.toml",
        TINY,
        strategies=["sequential", "abdelkhalek", "bsp-group"],
        cpus=[2, 4],
        clients=[16, 32],
        seeds=2,
        workers=1,
    )


@pytest.fixture(scope="module")
def figures(results):
    return comparison_figures(results)


def test_every_figure_is_drawn(figures):
    assert set(figures) == {
        "throughput",
        "parallel_fraction",
        "response_time",
        "breakdown",
        "load_balance",
        "gantt",
        "group_sizes",
    }


def test_the_response_time_curves_are_the_runs_packets_at_the_largest_point(results, figures):
    """One CDF per strategy over every seed's packets at the largest clients and CPUs; each
    ends at 1, and its label's p95 is the summed bins' 95th percentile."""
    (ax,) = figures["response_time"].axes
    table = results.response
    point = table[(table.clients == table.clients.max()) & (table.cpus == table.cpus.max())]
    curves = _lines(ax)
    assert {label.split(" (")[0] for label in curves} == set(point.strategy)
    for label, line in curves.items():
        rows = point[point.strategy == label.split(" (")[0]]
        counts = rows.groupby("response_ms")["packets"].sum().sort_index()
        share = np.cumsum(counts.to_numpy()) / counts.sum()
        np.testing.assert_allclose(line.get_ydata(), share)
        assert line.get_ydata()[-1] == pytest.approx(1.0)
        p95 = counts.index[np.searchsorted(share, 0.95)]
        assert f"p95 {p95:.3g} ms" in label
    assert results.response.groupby(["strategy", "seed"])["packets"].sum().gt(0).all()


def _lines(ax) -> dict:
    return {line.get_label(): line for line in ax.get_lines() if line.get_label()[0] != "_"}


def test_throughput_lines_are_the_means_against_clients(results, figures):
    replies_ax, frames_ax, messages_ax = figures["throughput"].axes
    assert replies_ax.get_ylabel() == "replies/s"
    assert frames_ax.get_ylabel() == "frames/s" and messages_ax.get_ylabel() == "messages/frame"
    assert frames_ax.get_xlabel() == "clients"
    for ax, metric in ((replies_ax, "replies_per_s"), (frames_ax, "frames_per_s")):
        lines = _lines(ax)
        line = lines["bsp-group, 4 CPUs"]
        expected = results.runs.query("strategy == 'bsp-group' and cpus == 4").groupby("clients")
        np.testing.assert_allclose(line.get_ydata(), expected[metric].mean().to_numpy())
        assert line.get_color() == STRATEGY_COLOURS["bsp-group"]
        assert len(lines) == 3 * 2  # strategy x CPU count


def test_the_replies_panel_draws_the_offered_rate_and_rings_overloaded_points(results):
    runs = results.runs.copy()
    # make one point overloaded: bsp-group on 2 CPUs at 32 clients answers half the packets
    hot = (runs.strategy == "bsp-group") & (runs.cpus == 2) & (runs.clients == 32)
    runs.loc[hot, "replies_per_s"] = runs.loc[hot, "offered_per_s"] / 2
    replies_ax = throughput_figure(runs).axes[0]
    offered = [line for line in replies_ax.get_lines() if line.get_linestyle() == "--"
               and line.get_color() == "black"]  # fmt: skip
    assert len(offered) == 1
    rate = runs.offered_per_s.iloc[0] / runs.clients.iloc[0]
    np.testing.assert_allclose(offered[0].get_ydata(), offered[0].get_xdata() * rate)
    rings = [c for c in replies_ax.collections if c.get_sizes().size and c.get_sizes()[0] > 100]
    points = np.concatenate([c.get_offsets() for c in rings])
    assert points.tolist() == [[32.0, runs.loc[hot, "replies_per_s"].mean()]]
    labels = throughput_figure(runs).legends[0].get_texts()
    assert any(t.get_text().startswith("overloaded") for t in labels)


def test_with_one_client_count_throughput_is_against_cpus(results):
    fig = throughput_figure(results.runs[results.runs.clients == 32])
    ax = fig.axes[0]
    assert ax.get_xlabel() == "CPUs"
    assert set(_lines(ax)) == {"sequential", "abdelkhalek", "bsp-group"}


def test_frames_and_messages_panels_label_several_ticks(results):
    """Log axes only over a decade or more (labelled 1-2-5); a narrower range stays linear."""
    for ax in throughput_figure(results.runs).axes[1:]:
        low, high = ax.get_ylim()
        labelled = [t for t in ax.get_yticks() if low <= t <= high]
        assert len(labelled) >= 3, ax.get_ylabel()
        means = np.concatenate([line.get_ydata() for line in ax.get_lines()])
        assert (ax.get_yscale() == "log") == (means.max() >= 10 * means.min())


def test_breakdown_bars_stack_to_one(figures):
    ax = figures["breakdown"].axes[0]
    tops: dict[float, float] = {}
    for bar in ax.patches:
        x = round(bar.get_x(), 6)
        tops[x] = tops.get(x, 0.0) + bar.get_height()
    assert len(tops) == 3 * 2  # strategies x CPU counts
    np.testing.assert_allclose(list(tops.values()), 1.0, atol=1e-6)


def test_load_balance_has_a_panel_per_cpu_count_with_the_even_share(figures):
    axes = figures["load_balance"].axes
    assert [ax.get_xlabel() for ax in axes] == ["CPU (2 CPUs)", "CPU (4 CPUs)"]
    for ax, n in zip(axes, (2, 4), strict=True):
        even = [line for line in ax.get_lines() if line.get_label() == "even share"]
        assert even and even[0].get_ydata()[0] == pytest.approx(1 / n)


@pytest.mark.parametrize("words", [3, 12, 30])
def test_the_load_balance_title_fits_inside_a_two_cpu_figure(results, words):
    """The narrowest case (one panel of 2 CPUs): a long title wraps instead of being cut."""
    load = results.cpu_load[results.cpu_load["cpus"] == 2]
    title = " ".join(["platform-cordeiro2007"] * words)
    fig = load_balance_figure(load, title)
    fig.canvas.draw()
    box = fig._suptitle.get_window_extent()
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width
    assert fig._suptitle.get_text().replace("\n", " ") == title


def test_gantt_has_a_panel_per_strategy_and_cpu_count(results, figures):
    axes = figures["gantt"].axes
    titles = [ax.get_title(loc="left") for ax in axes]
    # sequential runs one thread: its 2- and 4-CPU frames are the same, drawn once
    assert titles == [
        "sequential, 2 and 4 CPUs (identical: the extra CPUs stay idle)",
        *(f"{s}, {c} CPUs" for s in ("abdelkhalek", "bsp-group") for c in (2, 4)),
    ]
    assert [len(ax.get_yticks()) for ax in axes] == [2] + [2, 4] * 2
    # one x range per strategy, reaching its last interval
    gantt = results.gantt.query("clients == 32")
    for name, pair in (("abdelkhalek", axes[1:3]), ("bsp-group", axes[3:5])):
        assert pair[0].get_xlim() == pair[1].get_xlim()
        end = gantt[gantt.strategy == name].end_ms.max()
        assert pair[0].get_xlim()[1] >= end
    # a short legend of activity families, not one entry per activity
    families = [t.get_text() for t in figures["gantt"].legends[0].get_texts()]
    assert 3 <= len(families) <= 7 < gantt.activity.nunique()


def test_group_size_bars_are_the_binned_counts_of_the_table(results, figures):
    count_ax, entity_ax = figures["group_sizes"].axes[:2]
    sizes = results.group_sizes.query("clients == 32 and cpus == 2")
    counts = sizes.groupby("size")["groups"].sum()
    bins = [(1, 1), (2, 2), (3, 4), (5, 8)]
    expected = [counts[(counts.index >= lo) & (counts.index <= hi)].sum() for lo, hi in bins]
    bars = next(c for c in count_ax.containers if c.get_label().startswith("death32c-like, 2"))
    heights = [bar.get_height() for bar in bars]
    np.testing.assert_allclose(heights[:4], np.array(expected) / counts.sum())
    mean = (counts * counts.index).sum() / counts.sum()
    assert bars.get_label().endswith(f"({mean:.1f})")
    assert not count_ax.get_lines()  # bins are categories: bars, no lines between them


def test_figures_survive_runs_that_failed(monkeypatch):
    real_simulate = result_module.simulate

    def failing_bsp(scenario, keep_trace=None, keep_frames=None):
        if scenario.server.strategy == "bsp-group" and scenario.players.count == 32:
            raise RuntimeError("worker died")
        return real_simulate(scenario, keep_trace, keep_frames)

    monkeypatch.setattr(result_module, "simulate", failing_bsp)
    partial = compare(
        "scenarios/cordeiro2007/clone-nowait.toml",
        TINY,
        strategies=["sequential", "bsp-group"],
        cpus=[2],
        clients=[16, 32],
        seeds=1,
        workers=1,
    )
    assert len(partial.failed) == 1
    figures = comparison_figures(partial)
    assert {"throughput", "breakdown", "gantt", "group_sizes"} <= set(figures)
    # group sizes come from the only client count bsp-group finished
    assert "16 clients" in figures["group_sizes"].get_suptitle()


def test_figures_are_saved_as_png_and_svg(tmp_path, results):
    paths = save_figures(comparison_figures(results), tmp_path)
    assert len(paths) == 14  # 7 figures
    assert all(p.stat().st_size > 1000 for p in paths)


def test_colours_are_fixed_per_name():
    assert strategy_colour("bsp-group") == STRATEGY_COLOURS["bsp-group"]
    palette = {matplotlib.colors.to_hex(c) for c in matplotlib.colormaps["Dark2"].colors}
    assert strategy_colour("my-new-strategy") in palette
    assert activity_colour("lock_wait") != activity_colour("request")
    # an unknown wait takes no stage colour; an unknown OS activity the OS colour
    assert activity_colour("some_barrier_wait") not in ACTIVITY_COLOURS.values()
    assert activity_colour("mmap") == CATEGORY_FALLBACK["os"]
