"""The compiled load generator (simsrv/testbed/loadgen): its bytes against the Python
protocol's, and a real run beyond 32 clients (skipped without a C compiler, the shared folder
or the server's build tools)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from simsrv.testbed import protocol as qw
from simsrv.testbed.build import default_shared_root, missing_build_tools
from simsrv.testbed.clients import ClientPlan, PhasePattern
from simsrv.testbed.loadgen import build_loadgen, compiler, encode_moves, plan_text

SHARED = default_shared_root()
needs_cc = pytest.mark.skipif(compiler() is None, reason="no C compiler (cc or gcc) on PATH")
needs_server = [
    needs_cc,
    pytest.mark.skipif(
        not (SHARED / "qw-testbed" / "mvdsv-0.35.tar.gz").is_file(),
        reason=f"no shared folder with the mvdsv source at {SHARED}",
    ),
    pytest.mark.skipif(
        bool(missing_build_tools()), reason=f"missing build tools: {missing_build_tools()}"
    ),
    pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs"),
]


def server_test(test):
    """Skip ``test`` where the real server cannot be built and run."""
    for mark in needs_server:
        test = mark(test)
    return test


def _processes(pattern: str) -> list[str]:
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    return out.stdout.split()


def _leftovers() -> list[str]:
    return _processes("simsrv/testbed/.*/mvdsv") + _processes("simsrv/testbed/loadgen-.*/loadgen")


def _random_cmd(rng: np.random.Generator) -> qw.UserCmd:
    angles = (
        tuple(float(a) for a in rng.uniform(-720, 720, 3))
        if rng.random() < 0.5
        else (0.0, float(rng.uniform(0, 360)), 0.0)
    )
    return qw.UserCmd(
        msec=int(rng.integers(0, 300)),
        angles=angles,
        forward=int(rng.choice([0, 320, -320, int(rng.integers(-32768, 32768))])),
        side=int(rng.choice([0, 0, 350, -350])),
        up=int(rng.choice([0, 0, 200])),
        buttons=int(rng.integers(0, 4)),
        impulse=int(rng.choice([0, 0, 0, 7])),
    )


@needs_cc
@pytest.mark.parametrize("table_seed", [0, 1])
def test_generator_encodes_moves_as_the_python_protocol(table_seed):
    """Every clc_move the generator writes (checksum, loss, three delta-coded commands) has
    the bytes protocol.move_message writes for the same commands and sequence."""
    rng = np.random.default_rng(table_seed)
    table = bytes(rng.integers(0, 256, 1024, dtype=np.uint8))
    rows = [
        (int(rng.integers(0, 2**31 - 1)), tuple(_random_cmd(rng) for _ in range(3)))
        for _ in range(1500)
    ]
    rows.append((1, (qw.NULL_CMD, qw.NULL_CMD, qw.NULL_CMD)))
    got = encode_moves(build_loadgen(), table, rows)
    expected = [qw.move_message(table, sequence, cmds) for sequence, cmds in rows]
    assert len(got) == len(expected)
    mismatches = [i for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b]
    assert mismatches == []


def test_plan_hands_over_the_python_clients_phases():
    for pattern in ("step", "independent", "hosts:4"):
        plan = ClientPlan(40, 77.0, PhasePattern.parse(pattern), seed=3)
        text, phases = plan_text(plan, 27600, 1.0, 2.0, 20.0)
        rng = np.random.default_rng(3)
        expected = plan.phases.phases(40, 1 / 77.0, rng.spawn(41)[-1])
        assert np.array_equal(phases, expected)
        lines = [line.split() for line in text.splitlines() if line.startswith("client ")]
        assert [float(f[2]) for f in lines] == list(expected)
        assert [int(f[3]) for f in lines] == list(np.ceil(np.arange(40) * 0.05 * 77.0))


def test_keep_up_warning_names_the_bound():
    from simsrv.testbed.run import keep_up_warning

    summary = {
        "send_lateness_p95_ms": 0.2,
        "client_busy_share": 0.3,
        "load_generator": "c",
        "config": {"clients": 256, "rate_hz": 77.0},
    }
    assert keep_up_warning(summary) is None
    late = keep_up_warning({**summary, "send_lateness_p95_ms": 2.5})
    assert "p95 send lateness 2.50 ms > 1 ms" in late and "\n" not in late
    busy = keep_up_warning({**summary, "client_busy_share": 0.97})
    assert "busy 97% of the window > 95%" in busy


@pytest.fixture(scope="module")
def forty_eight_clients():
    from simsrv.testbed.run import TestbedConfig, run_testbed

    before = _leftovers()
    result = run_testbed(
        TestbedConfig(clients=48, map="dm1", duration_s=3.0, warmup_s=1.0, port=27730)
    )
    return result, before


@server_test
def test_more_than_32_clients_play_on_the_real_server(forty_eight_clients):
    result, _ = forty_eight_clients
    s, clients = result.summary, result.clients
    assert s["load_generator"] == "c"
    assert s["clients_began"] == 48 and clients["began"].all()
    window = result.frames[result.frames["measured"]]
    assert window["active_clients"].min() == 48
    sent = s["packets_sent_by_clients"]
    assert sent == pytest.approx(48 * 77 * 3, rel=0.02)
    assert (clients["moves_sent"] > 0).all()
    # the server accepted the moves: their checksums were right
    assert window["moves"].sum() == pytest.approx(window["packets"].sum(), rel=0.01)
    assert window["packets"].sum() == pytest.approx(sent, rel=0.01)
    assert s["reply_ratio"] == pytest.approx(1.0, abs=0.05)
    assert s["clients_moved"] >= 40  # origins from their replies change
    assert (clients["parse_errors"] == 0).all()
    assert len(result.sends) == sent
    assert s["client_busy_share"] < 0.5
    assert np.isfinite(s["send_lateness_p95_ms"])


@server_test
def test_no_process_outlives_the_run(forty_eight_clients):
    _, before = forty_eight_clients
    time.sleep(0.2)
    assert _leftovers() == before == []


@server_test
def test_interrupt_stops_the_generator_and_the_server(tmp_path):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "simsrv", "testbed", "--clients", "40", "--duration-s", "30"]
    process = subprocess.Popen(
        [*cmd, "--port", "27731"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not _processes("simsrv/testbed/loadgen-.*/loadgen"):
        time.sleep(0.1)
    assert _processes("simsrv/testbed/loadgen-.*/loadgen"), "the generator did not start"
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=20)
    assert process.returncode == 130
    assert err.decode().strip().splitlines() == ["simsrv: interrupted"]
    time.sleep(0.3)
    assert _leftovers() == []
