"""Response times (simsrv.workload.response_time): the sketch's quantiles within their stated
bound of the exact ones on hand-made frames, merging equal to one sketch over the union, held
replies counted apart, and a run's counts consistent with its frames."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsrv.pipeline.keep_window import KEEP_ALL
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.simulation import simulate
from simsrv.pipeline.summary import summarize
from simsrv.workload.response_time import (
    RELATIVE_ACCURACY,
    RESPONSE,
    WAIT,
    ResponseTimes,
    record_packets,
)

Frame = tuple[np.ndarray, float, float]  # arrivals (s), start (s), end (s)


@st.composite
def frames(draw) -> list[Frame]:
    """Frames with packets that arrived before the frame started (up to 10 s before)."""
    out = []
    t = 0.0
    for _ in range(draw(st.integers(1, 6))):
        start = t + draw(st.floats(0.0, 0.5))
        length = draw(st.floats(1e-5, 0.2))
        waits = draw(st.lists(st.floats(0.0, 10.0), min_size=0, max_size=40))
        out.append((np.array([start - w for w in waits]), start, start + length))
        t = start + length
    return out


def _sketch(frames: list[Frame], held_frames: frozenset[int] = frozenset()) -> ResponseTimes:
    times = ResponseTimes()
    held = np.full(1, -1, np.int64)
    for f, (arrivals, start, end) in enumerate(frames):
        held[0] = f if f in held_frames else -1
        clients = np.zeros(len(arrivals), np.int32)
        record_packets(arrivals, clients, start, end, f, held, times.counts, times.stats)
    return times


def _exact(frames: list[Frame], row: int) -> np.ndarray:
    values = [
        ((end if row == RESPONSE else start) - a) * 1e3 for arrivals, start, end in frames
        for a in arrivals
    ]  # fmt: skip
    return np.asarray(values)


@settings(max_examples=60, deadline=None)
@given(frames(), st.sampled_from([0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 1.0]))
def test_quantiles_are_within_the_stated_relative_error_of_the_exact_ones(frames, q):
    times = _sketch(frames)
    for row in (RESPONSE, WAIT):
        exact = _exact(frames, row)
        if len(exact) == 0:
            assert times.answered == 0 and math.isnan(times.quantile(row, q))
            continue
        truth = float(np.quantile(exact, q, method="inverted_cdf"))
        estimate = times.quantile(row, q)
        if truth < 1e-3:  # below 1 us: reported as 0
            assert estimate <= 1e-3
        else:
            assert abs(estimate - truth) <= RELATIVE_ACCURACY * truth + 1e-12
        distribution = times.distribution(row)
        assert distribution["max"] == pytest.approx(exact.max(), rel=1e-12, abs=1e-12)
        assert distribution["mean"] == pytest.approx(exact.mean(), rel=1e-9, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(frames(), frames())
def test_merged_sketches_equal_one_sketch_over_the_union(first, second):
    merged = _sketch(first).merge(_sketch(second))
    union = _sketch(first + second)
    np.testing.assert_array_equal(merged.counts, union.counts)
    np.testing.assert_allclose(merged.stats, union.stats, rtol=1e-12, atol=1e-9)
    assert merged.summary()["answered_packets"] == union.answered


def test_a_known_frame_gives_its_exact_response_and_wait():
    """Three packets arrive 10, 20 and 30 ms before a frame that runs 5 ms: waits 10/20/30
    ms, responses 15/25/35 ms."""
    frames = [(np.array([0.97, 0.98, 0.99]), 1.0, 1.005)]
    times = _sketch(frames)
    response, wait = times.distribution(RESPONSE), times.distribution(WAIT)
    assert response["mean"] == pytest.approx(25.0) and response["max"] == pytest.approx(35.0)
    assert wait["mean"] == pytest.approx(20.0) and wait["max"] == pytest.approx(30.0)
    assert response["p50"] == pytest.approx(25.0, rel=RELATIVE_ACCURACY)
    assert wait["p50"] == pytest.approx(20.0, rel=RELATIVE_ACCURACY)


def test_packets_whose_reply_the_rate_limit_held_are_unanswered_not_measured():
    frames = [(np.array([0.5, 0.6]), 1.0, 1.01), (np.array([1.005]), 1.01, 1.02)]
    times = _sketch(frames, held_frames=frozenset({0}))
    assert times.answered == 1 and times.unanswered == 2
    assert times.distribution(RESPONSE)["max"] == pytest.approx(15.0)


def test_no_packets_give_no_numbers():
    summary = ResponseTimes().summary()
    assert summary["answered_packets"] == 0 and summary["unanswered_packets"] == 0
    assert all(math.isnan(v) for v in summary["response_time_ms"].values())


@pytest.mark.parametrize("strategy", ["sequential", "abdelkhalek"])
def test_a_run_measures_every_packet_its_measured_frames_read(strategy):
    scenario = load_scenario(
        None, [f"server.strategy={strategy}", "run.duration_s=0.5", "run.warmup_s=0.3"]
    )
    out = simulate(scenario, keep_frames=KEEP_ALL)
    frames = out.frames
    measured = frames[(frames.start_s >= 0.3) & (frames.start_s < 0.8)]
    summary = summarize(scenario, out)
    assert summary["answered_packets"] + summary["unanswered_packets"] == measured.messages.sum()
    response, wait = summary["response_time_ms"], summary["socket_wait_ms"]
    assert 0 <= wait["mean"] < response["mean"] <= response["max"]
    # a packet waits at most until its frame starts, and is answered at the frame's end
    assert response["max"] <= (wait["max"] + measured.duration_s.max() * 1e3) * (1 + 1e-9)
    assert response["max"] >= measured.duration_s.min() * 1e3


def test_json_output_writes_null_for_a_metric_without_a_value(capsys):
    import io
    import json

    from simsrv.cli.main import main
    from simsrv.core.json_output import dump, json_safe

    summary = ResponseTimes().summary()  # no packet answered: NaN in Python
    assert json_safe(summary)["response_time_ms"] == dict.fromkeys(
        ("mean", "p50", "p95", "p99", "max")
    )
    out = io.StringIO()
    dump({"a": [math.nan, 1.0, {"b": math.inf}]}, out)
    assert out.getvalue() == '{"a": [null, 1.0, {"b": null}]}'

    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    assert main(["run", "--set", "run.duration_s=0.1", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out, parse_constant=refuse)  # strict JSON
    assert printed["response_time_ms"]["p95"] > 0
