"""The comparison figures are drawn from the tables they claim to show."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from simsrv import result as result_module  # noqa: E402
from simsrv.figures.comparison import comparison_figures, save_figures  # noqa: E402
from simsrv.figures.style import (  # noqa: E402
    ACTIVITY_COLOURS,
    CATEGORY_FALLBACK,
    STRATEGY_COLOURS,
    activity_colour,
    strategy_colour,
)
from simsrv.figures.throughput import throughput_figure  # noqa: E402
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
        "breakdown",
        "load_balance",
        "gantt",
        "group_sizes",
    }


def test_throughput_lines_are_the_means_against_clients(results, figures):
    frames_ax, messages_ax = figures["throughput"].axes
    assert frames_ax.get_ylabel() == "frames/s" and messages_ax.get_ylabel() == "messages/frame"
    assert frames_ax.get_xlabel() == "clients"
    lines = {line.get_label(): line for line in frames_ax.get_lines()}
    line = lines["bsp-group, 4 CPUs"]
    expected = results.runs.query("strategy == 'bsp-group' and cpus == 4").groupby("clients")
    np.testing.assert_allclose(line.get_ydata(), expected.frames_per_s.mean().to_numpy())
    assert line.get_color() == STRATEGY_COLOURS["bsp-group"]
    assert len(lines) == 3 * 2  # strategy x CPU count


def test_with_one_client_count_throughput_is_against_cpus(results):
    fig = throughput_figure(results.runs[results.runs.clients == 32])
    ax = fig.axes[0]
    assert ax.get_xlabel() == "CPUs"
    assert {line.get_label() for line in ax.get_lines()} == {"sequential", "abdelkhalek",
                                                            "bsp-group"}  # fmt: skip


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


def test_gantt_has_a_panel_per_strategy_and_cpu_count(results, figures):
    axes = figures["gantt"].axes
    titles = [ax.get_title(loc="left") for ax in axes]
    assert titles == [f"{s}, {c} CPUs" for s in ("sequential", "abdelkhalek", "bsp-group")
                      for c in (2, 4)]  # fmt: skip
    assert [len(ax.get_yticks()) for ax in axes] == [2, 4] * 3


def test_group_size_lines_are_the_binned_counts_of_the_table(results, figures):
    count_ax, entity_ax = figures["group_sizes"].axes[:2]
    sizes = results.group_sizes.query("clients == 32 and cpus == 2")
    counts = sizes.groupby("size")["groups"].sum()
    bins = [(1, 1), (2, 2), (3, 4), (5, 8)]
    expected = [counts[(counts.index >= lo) & (counts.index <= hi)].sum() for lo, hi in bins]
    line = next(x for x in count_ax.get_lines() if x.get_label().startswith("death32c-like, 2"))
    np.testing.assert_allclose(line.get_ydata()[:4], np.array(expected) / counts.sum())
    mean = (counts * counts.index).sum() / counts.sum()
    assert line.get_label().endswith(f"({mean:.1f})")


def test_figures_survive_runs_that_failed(monkeypatch):
    real_simulate = result_module.simulate

    def failing_bsp(scenario):
        if scenario.server.strategy == "bsp-group" and scenario.players.count == 32:
            raise RuntimeError("worker died")
        return real_simulate(scenario)

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
    assert len(paths) == 12
    assert all(p.stat().st_size > 1000 for p in paths)


def test_colours_are_fixed_per_name():
    assert strategy_colour("bsp-group") == STRATEGY_COLOURS["bsp-group"]
    palette = {matplotlib.colors.to_hex(c) for c in matplotlib.colormaps["Dark2"].colors}
    assert strategy_colour("my-new-strategy") in palette
    assert activity_colour("lock_wait") != activity_colour("request")
    # an unknown wait takes no stage colour; an unknown OS activity the OS colour
    assert activity_colour("some_barrier_wait") not in ACTIVITY_COLOURS.values()
    assert activity_colour("mmap") == CATEGORY_FALLBACK["os"]
