"""The comparison grid: validation, determinism across workers, tidy tables, saving, failures."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from simsrv.core.errors import InputError
from simsrv.pipeline import result as result_module
from simsrv.pipeline.keep_window import KEEP_ALL
from simsrv.pipeline.result import run
from simsrv.sweep import CompareResults, compare, format_table, mean_ci
from simsrv.sweep import records as records_module
from simsrv.sweep.grid import base_dict, build_grid
from simsrv.sweep.local import round_robin, run_parallel
from simsrv.sweep.records import VOLATILE
from simsrv.sweep.statistics import ci95_half_width

TINY = ["run.duration_s=0.15", "run.warmup_s=0.05", "players.count=32"]


def _base(*extra: str) -> dict:
    return base_dict("scenarios/cordeiro2007/clone-nowait.toml", [*TINY, *extra])


def test_grid_is_the_full_product_with_seeds_offset_from_the_base_seed():
    grid = build_grid(_base("run.seed=7"), ["sequential", "bsp-group"], [2, 4], [16, 32], 3)
    assert len(grid) == 2 * 2 * 2 * 3
    first = grid[0].point
    assert (first.strategy, first.cpus, first.clients, first.seed) == ("sequential", 2, 16, 7)
    assert [g.point.seed for g in grid[:3]] == [7, 8, 9]
    for g in grid:
        assert g.scenario.machine.cpus == g.point.cpus
        assert g.scenario.players.count == g.point.clients
        assert g.scenario.run.seed == g.point.seed
        assert g.scenario.server.strategy == g.point.strategy


def test_the_base_strategy_keeps_its_options_and_the_others_get_defaults():
    grid = build_grid(_base('server.options.reap="wait"'), ["bsp-group", "abdelkhalek"], [2])
    bsp = next(g for g in grid if g.point.strategy == "bsp-group").scenario.server.options
    assert (bsp.spawn, bsp.affinity, bsp.reap) == ("clone", "pinned", "wait")
    other = next(g for g in grid if g.point.strategy == "abdelkhalek").scenario.server.options
    assert other.locking == "region"  # the registered default, not bsp-group's table


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"strategies": ["nope"]}, "--strategies: unknown strategy 'nope'; allowed: "),
        ({"cpus": [0]}, "--cpus: every value must be a whole number >= 1, got 0"),
        ({"clients": [8, 8]}, "--clients: values must be distinct"),
        ({"seeds": 0}, "--seeds: must be a whole number >= 1, got 0"),
        ({"duration_s": -1.0}, "--duration-s: must be a number of seconds > 0"),
        ({"cpus": [70000]}, "machine.cpus"),
    ],
)
def test_bad_grids_are_one_line_input_errors(kwargs, message):
    with pytest.raises(InputError) as error:
        build_grid(_base(), **{"strategies": ["sequential"], **kwargs})
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_a_bad_base_scenario_fails_before_any_run():
    with pytest.raises(InputError, match="players.count"):
        base_dict(None, ["players.count=-3"])


def compare_small(workers: int) -> CompareResults:
    """Three strategies x 2 CPU counts x 2 seeds of the tiny clone-nowait run."""
    return compare(
        "scenarios/cordeiro2007/clone-nowait.toml",
        TINY,
        strategies=["sequential", "bsp-group", "area-quadrant"],
        cpus=[2, 4],
        seeds=2,
        workers=workers,
    )


@pytest.fixture(scope="module")
def small() -> CompareResults:
    return compare_small(workers=1)


def test_results_are_identical_on_one_worker_and_on_a_process_pool(small):
    pooled = compare_small(workers=2)
    for name in ("runs", "breakdown", "cpu_load", "group_sizes", "gantt"):
        a, b = getattr(small, name), getattr(pooled, name)
        if name == "runs":
            a, b = a.drop(columns=list(VOLATILE)), b.drop(columns=list(VOLATILE))
        pd.testing.assert_frame_equal(a, b)


def test_run_rows_match_a_direct_run_of_the_same_point(small):
    grid = build_grid(_base(), ["bsp-group"], [4], None, 2)
    direct = run(grid[1].scenario).summary
    row = small.runs.query("strategy == 'bsp-group' and cpus == 4 and seed_index == 1").iloc[0]
    assert row["frames_per_s"] == direct["frames_per_s"]
    assert row["parallel_fraction"] == direct["parallel_fraction"]
    assert row["groups_per_frame"] == direct["groups"]["mean_count"]
    assert math.isnan(small.runs.query("strategy == 'sequential'")["groups_per_frame"].iloc[0])
    assert small.runs["error"].isna().all()
    assert len(small.runs) == small.planned == 3 * 2 * 2


def test_group_size_counts_conserve_the_grouped_entities(small):
    grid = build_grid(_base(), ["bsp-group"], [2], None, 1)
    result = run(grid[0].scenario, keep_frames=KEEP_ALL)
    t0, t1 = 0.05, 0.2
    frames = result.frames[(result.frames.start_s >= t0) & (result.frames.start_s < t1)]
    sizes = small.group_sizes.query("cpus == 2 and seed_index == 0")
    assert (sizes["size"] * sizes["groups"]).sum() == frames["group_entities"].sum()
    assert sizes["groups"].sum() == frames["groups"].sum()


def test_breakdown_shares_of_each_run_sum_to_one(small):
    parts = small.breakdown[small.breakdown.category != "intra_frame_wait"]
    totals = parts.groupby(["strategy", "cpus", "seed"]).share.sum()
    np.testing.assert_allclose(totals, 1.0, atol=1e-9)


def test_cpu_load_has_one_row_per_cpu_and_gantt_only_seed_index_zero(small):
    counts = small.cpu_load.groupby(["strategy", "cpus", "seed"]).size()
    assert (counts.index.get_level_values("cpus") == counts.to_numpy()).all()
    assert set(small.gantt["seed_index"]) == {0}
    assert (small.gantt["end_ms"] > small.gantt["start_ms"]).all()
    assert small.gantt["frame"].nunique() >= records_module.GANTT_FRAMES


def test_tables_are_saved_after_every_run_and_load_back(tmp_path):
    seen = []

    def check(grid_run, records) -> None:
        seen.append(len(pd.read_parquet(tmp_path / "runs.parquet")))

    results = compare(None, TINY, ["sequential"], [1, 2], seeds=2, workers=1, out=tmp_path,
                      on_done=check)  # fmt: skip
    assert seen == [1, 2, 3, 4]
    loaded = CompareResults.load(tmp_path)
    pd.testing.assert_frame_equal(loaded.runs, results.runs)
    pd.testing.assert_frame_equal(loaded.gantt, results.gantt)


def test_a_damaged_table_is_left_out_of_a_load_with_one_line(tmp_path):
    """Failure 16 (issue 42): a truncated table stopped ``CompareResults.load`` (and so an
    interrupted ``simsrv compare``'s report) with a pyarrow traceback."""
    runs = pd.DataFrame({"strategy": ["sequential", "bsp-group"], "frames_per_s": [30.0, 31.5]})
    cpu_load = pd.DataFrame({"cpu": [0, 1], "utilization": [0.5, 0.25]})
    CompareResults(runs=runs, cpu_load=cpu_load, planned=4).save(tmp_path)
    path = tmp_path / "runs.parquet"
    path.write_bytes(path.read_bytes()[:-7])
    (tmp_path / "compare.json").write_text('{"plann')
    lines: list[str] = []
    loaded = CompareResults.load(tmp_path, warn=lines.append)
    assert loaded.runs.empty and loaded.planned == 0
    pd.testing.assert_frame_equal(loaded.cpu_load, cpu_load)
    assert len(lines) == 2 and "runs.parquet (Parquet magic bytes not found" in lines[0]
    assert "compare.json" in lines[1] and all("\n" not in line for line in lines)


def test_a_failing_run_is_recorded_and_the_others_finish(monkeypatch):
    real_simulate = result_module.simulate

    def flaky(scenario, keep_trace=None, keep_frames=None):
        if scenario.run.seed == 2:
            raise ZeroDivisionError("boom")
        return real_simulate(scenario, keep_trace, keep_frames)

    monkeypatch.setattr(result_module, "simulate", flaky)
    results = compare(None, TINY, ["sequential"], [2], seeds=3, workers=1)
    assert len(results.runs) == 3
    failed = results.failed
    assert list(failed["seed"]) == [2]
    assert failed["error"].iloc[0].startswith("ZeroDivisionError: boom at test_sweep.py:")
    assert math.isnan(failed["frames_per_s"].iloc[0])
    summary = mean_ci(results.runs, ["frames_per_s"])
    assert summary["n"].tolist() == [2]


def test_ci95_is_students_interval():
    values = [1.0, 2.0, 3.0, 6.0]
    expected = stats.t.ppf(0.975, 3) * np.std(values, ddof=1) / 2.0
    assert ci95_half_width(values) == pytest.approx(expected)
    assert ci95_half_width([1.0, 2.0, 3.0]) == pytest.approx(2.4841, abs=1e-4)
    assert math.isnan(ci95_half_width([5.0]))


def test_mean_ci_and_table_per_point():
    runs = pd.DataFrame(
        {
            "strategy": ["a", "a", "b", "b"],
            "cpus": [2, 2, 2, 2],
            "clients": [8, 8, 8, 8],
            "frames_per_s": [10.0, 12.0, 5.0, 5.0],
            "error": [None] * 4,
        }
    )
    summary = mean_ci(runs, ["frames_per_s"])
    assert summary["mean"].tolist() == [11.0, 5.0]
    assert summary["ci95"].iloc[1] == 0.0
    table = format_table(summary)
    assert "11.0 ± 12.7" in table and "5.0 ± 0.0" in table
    assert table.splitlines()[0].split()[:3] == ["strategy", "cpus", "clients"]


def test_run_returns_the_error_instead_of_raising_when_asked(monkeypatch):
    def broken(scenario, keep_trace=None, keep_frames=None):
        raise RuntimeError("no CPU")

    monkeypatch.setattr(result_module, "simulate", broken)
    scenario = build_grid(_base(), ["sequential"], [2], None, 1)[0].scenario
    with pytest.raises(RuntimeError):
        run(scenario)
    failed = run(scenario, raise_errors=False)
    assert failed.error.startswith("RuntimeError: no CPU at test_sweep.py:")
    assert failed.summary == {} and failed.frames.empty
    assert failed.summary_frame()["error"].iloc[0] == failed.error


def test_summary_frame_is_one_flat_row_with_provenance():
    scenario = build_grid(_base(), ["bsp-group"], [2], None, 1)[0].scenario
    result = run(scenario, keep_frames=KEEP_ALL)
    row = result.summary_frame()
    assert len(row) == 1
    assert row["frames_per_s"].iloc[0] == result.summary["frames_per_s"]
    assert row["moments.overlap"].iloc[0] == result.summary["moments"]["overlap"]
    assert row["cpu_utilization.1"].iloc[0] == result.summary["cpu_utilization"][1]
    assert row["per_thread.coordinator.idle"].iloc[0] == pytest.approx(
        result.summary["per_thread"]["coordinator"]["idle"]
    )
    assert {"seed", "simsrv_version", "wall_time_s", "error"} <= set(row.columns)
    np.testing.assert_allclose(
        result.frames["duration_s"], result.frames["end_s"] - result.frames["start_s"]
    )


def test_a_worker_that_dies_becomes_a_failed_row():
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    from simsrv.sweep.local import _report, failed_row

    grid = build_grid(_base(), ["sequential"], [2], None, 1)
    future: Future = Future()
    future.set_exception(BrokenProcessPool("a worker was killed"))
    seen = []
    _report(future, 0, lambda i, records: seen.append((i, records)), partial(failed_row, grid))
    ((index, records),) = seen
    assert index == 0
    assert records.error.startswith("BrokenProcessPool: a worker was killed")
    assert math.isnan(records.runs[0]["frames_per_s"]) and math.isnan(records.runs[0]["frames"])


@given(
    offered=st.floats(1.0, 1e5),
    ratio=st.floats(0.0, 1.5),
    dropped=st.floats(0.0, 1.0),
)
def test_a_point_is_overloaded_exactly_when_replies_fall_short_or_packets_drop(
    offered, ratio, dropped
):
    from simsrv.sweep.overload import is_overloaded

    replies = ratio * offered
    expected = replies < 0.95 * offered or dropped > 0.01
    assert is_overloaded(replies, offered, dropped) is expected
    # answering more, or dropping less, never makes a point overloaded
    if not expected:
        assert not is_overloaded(replies * 1.1, offered, dropped / 2)


def _point_runs(seeds: int, replies: float, dropped: float = 0.0) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "strategy": ["a"] * seeds,
            "cpus": [2] * seeds,
            "clients": [8] * seeds,
            "frames_per_s": [10.0 + i for i in range(seeds)],
            "replies_per_s": [replies] * seeds,
            "offered_per_s": [250.0] * seeds,
            "dropped_fraction": [dropped] * seeds,
            "error": [None] * seeds,
        }
    )


@pytest.mark.parametrize(
    ("replies", "dropped", "flag"),
    [(250.0, 0.0, "no"), (200.0, 0.0, "yes"), (250.0, 0.05, "yes"), (240.0, 0.01, "no")],
)
def test_the_table_flags_overloaded_points(replies, dropped, flag):
    summary = mean_ci(_point_runs(3, replies, dropped), ["frames_per_s", "replies_per_s"])
    assert summary["overloaded"].tolist() == [flag == "yes"] * 2
    table = format_table(summary)
    header, _, row = table.splitlines()[:3]
    assert header.split()[-1] == "overloaded" and row.split()[-1] == flag
    assert "overloaded: replies below 95% of the offered packets/s" in table


def test_fewer_than_three_seeds_print_a_warning_beside_the_interval():
    two = format_table(mean_ci(_point_runs(2, 250.0), ["frames_per_s"]))
    assert "10.5 ± 6.4 !" in two
    assert "! warning: fewer than 3 seeds" in two and "t = 12.7 for 2 seeds" in two
    three = format_table(mean_ci(_point_runs(3, 250.0), ["frames_per_s"]))
    assert "!" not in three and "warning" not in three
    one = format_table(mean_ci(_point_runs(1, 250.0), ["frames_per_s"]))
    assert "10.0 ± - !" in one and "one seed gives no confidence interval" in one


def test_runs_without_replies_have_no_overloaded_column():
    runs = _point_runs(3, 250.0).drop(columns=["offered_per_s"])
    summary = mean_ci(runs, ["frames_per_s"])
    assert "overloaded" not in summary and "overloaded" not in format_table(summary)


@given(st.lists(st.sampled_from("abcd"), max_size=30))
def test_a_pool_starts_one_run_of_each_strategy_in_turn(keys):
    """round_robin: a permutation of the grid that keeps each strategy's runs in order and
    starts the first run of every strategy before any strategy's second."""
    order = round_robin(keys)
    assert sorted(order) == list(range(len(keys)))
    for key in set(keys):
        mine = [i for i in order if keys[i] == key]
        assert mine == sorted(mine)
    distinct = list(dict.fromkeys(keys))
    assert [keys[i] for i in order[: len(distinct)]] == distinct
    assert round_robin(["s", "s", "a", "a", "b"]) == [0, 2, 4, 1, 3]


def test_the_pool_runs_every_point_once_in_the_order_given():
    seen = []
    run_parallel(
        [10, 20, 30], lambda x: x * 2, 1, lambda i, r: seen.append((i, r)), None, [2, 0, 1]
    )
    assert seen == [(2, 60), (0, 20), (1, 40)]


@given(
    st.floats(0.0, 500.0, allow_nan=False),
    st.sampled_from([1000 / 30, 1000 / 77, 100.0]),
)
def test_a_point_whose_p95_response_exceeds_one_client_frame_is_overloaded(p95_ms, period_ms):
    from simsrv.sweep.overload import is_overloaded, point_overloaded

    keeps_up = (5000.0, 5000.0, 0.0)  # every packet answered, none dropped
    assert is_overloaded(*keeps_up, p95_ms, period_ms) is (p95_ms > period_ms)
    assert not is_overloaded(*keeps_up, math.nan, period_ms)
    means = dict(zip(("replies_per_s", "offered_per_s", "dropped_fraction"), keeps_up, strict=True))
    assert not point_overloaded(means)  # a table without the response columns
    means.update(response_p95_ms=p95_ms, client_period_ms=period_ms)
    assert point_overloaded(means) is (p95_ms > period_ms)
