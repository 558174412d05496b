"""The platform's wake-up latency: an idle server's frame starts ``wakeup_latency_us`` after
the packet that wakes it, and packets arriving meanwhile join that frame (every frame loop)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simsrv.calibration.platform_file import dump_toml
from simsrv.pipeline import simulation
from simsrv.pipeline.keep_window import KEEP_ALL
from simsrv.pipeline.load import load_scenario
from simsrv.pipeline.result import run
from simsrv.platforms.profile import PLATFORM_DIR
from simsrv.testbed.frames import wakeup_latencies_us

ROOT = Path(__file__).resolve().parents[1]
CUBE = ROOT / "scenarios" / "cube-160.toml"


def _platform(tmp_path: Path, wakeup_us: float) -> str:
    data = tomllib.loads((PLATFORM_DIR / "cordeiro2007-xeon.toml").read_text())
    data["wakeup_latency_us"] = wakeup_us
    path = tmp_path / f"wakeup-{wakeup_us:g}.toml"
    path.write_text(dump_toml(data))
    return str(path)


def _pair_in_step(platform: str) -> pd.DataFrame:
    """Two clients of one host, sent 20 us apart (a burst of 40 us over 2 slots), 31.25 Hz."""
    scenario = load_scenario(
        CUBE,
        [
            "players.count=2",
            "clients.hosts=1",
            "clients.host_burst_s=4e-05",
            "clients.jitter_s=0",
            "run.duration_s=1",
            "run.warmup_s=0.2",
            "server.strategy=sequential",
            "machine.cpus=1",
            f"machine.platform={platform}",
        ],
    )
    return run(scenario, keep_frames=KEEP_ALL).frames


def test_a_wakeup_longer_than_the_gap_reads_both_packets_in_one_frame(tmp_path):
    eager = _pair_in_step(_platform(tmp_path, 0.0))
    sleepy = _pair_in_step(_platform(tmp_path, 50.0))
    # without a wake-up, the first packet starts a frame at once and the second waits for
    # the next one; with 50 us, the frame starts after the second (sent 20 us later) arrived
    assert (eager["messages"] == 1).all()
    assert (sleepy["messages"] == 2).all()
    assert len(eager) == 2 * len(sleepy)
    # the exact timeline: each frame starts 50 us after the first packet of its burst, which
    # is when the eager server's first frame of the same burst started
    starts = sleepy["start_s"].to_numpy()
    assert np.allclose(starts, eager["start_s"].to_numpy()[::2] + 50e-6, rtol=0, atol=1e-12)


def test_a_wakeup_shorter_than_the_gap_changes_only_the_start(tmp_path):
    eager = _pair_in_step(_platform(tmp_path, 0.0))
    late = _pair_in_step(_platform(tmp_path, 5.0))
    assert (late["messages"] == 1).all() and len(late) == len(eager)
    first = late["start_s"].to_numpy()[::2] - eager["start_s"].to_numpy()[::2]
    assert np.allclose(first, 5e-6, rtol=0, atol=1e-12)


def test_the_compiled_loop_runs_the_python_loops_frames_with_a_wakeup(tmp_path, monkeypatch):
    from tests.test_compiled_loop import _assert_same, _runs

    fast, slow, loop = _runs(
        ["server.strategy=abdelkhalek", f"machine.platform={_platform(tmp_path, 120.0)}"],
        monkeypatch,
    )
    _assert_same(fast, slow)
    assert loop.frames > len(fast.frames) / 2
    eager, _, _ = _runs(["server.strategy=abdelkhalek"], monkeypatch)
    assert fast.frames["messages"].mean() > eager.frames["messages"].mean()


@pytest.mark.parametrize("strategy", ["sequential", "bsp-group"])
def test_a_one_node_cluster_wakes_like_the_single_server(tmp_path, strategy):
    sets = [
        "run.duration_s=1",
        "run.warmup_s=0.3",
        f"server.strategy={strategy}",
        f"machine.platform={_platform(tmp_path, 300.0)}",
        "clients.rate_hz=5",
    ]
    single = run(load_scenario(CUBE, sets), keep_frames=KEEP_ALL, keep_trace=KEEP_ALL)
    cluster = run(
        load_scenario(CUBE, [*sets, "cluster.nodes=1"]), keep_frames=KEEP_ALL, keep_trace=KEEP_ALL
    )
    assert single.frames.equals(cluster.frames)
    assert single.trace.equals(cluster.trace)
    ignored = {"scenario", "wall_time_s", "nodes", "interconnect", "zoning"}
    a, b = single.to_json_dict(), cluster.to_json_dict()
    assert {k: v for k, v in a.items() if k not in ignored} == {
        k: v for k, v in b.items() if k not in ignored
    }


def test_measured_wakeup_latencies_pick_the_packet_that_woke_an_idle_server():
    frames = pd.DataFrame(
        {
            "start_s": [1.0, 1.0010, 1.0020],
            "wall_us": [100.0, 100.0, 100.0],
            "measured": [True, True, True],
        }
    )
    # 1.00095 wakes frame 1 (after frame 0 ended at 1.0001); nothing arrives between frame 1's
    # end (1.0011) and frame 2's start except 1.0019
    sent = np.array([0.9999, 1.00095, 1.0019, 1.0030])
    latencies = wakeup_latencies_us(frames, sent)
    assert np.allclose(latencies, [50.0, 100.0])
    assert len(wakeup_latencies_us(frames.iloc[:1], sent)) == 0


def test_no_wakeup_leaves_runs_unchanged(tmp_path):
    scenario = load_scenario(CUBE, ["run.duration_s=0.5", "run.warmup_s=0.1"])
    explicit = load_scenario(
        CUBE,
        ["run.duration_s=0.5", "run.warmup_s=0.1", f"machine.platform={_platform(tmp_path, 0.0)}"],
    )
    a = simulation.simulate(scenario, KEEP_ALL, keep_frames=KEEP_ALL)
    b = simulation.simulate(explicit, KEEP_ALL, keep_frames=KEEP_ALL)
    pd.testing.assert_frame_equal(a.frames, b.frames, check_exact=True)
    pd.testing.assert_frame_equal(a.trace, b.trace, check_exact=True)
