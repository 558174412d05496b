"""The real QuakeWorld server on this machine (skipped without the shared folder or cmake).

These run the patched mvdsv built from ../shared/qw-testbed with synthetic clients on the
loopback interface, a few seconds each.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simsrv.core.errors import InputError
from simsrv.testbed.build import default_shared_root, missing_build_tools

SHARED = default_shared_root()
pytestmark = [
    pytest.mark.skipif(
        not (SHARED / "qw-testbed" / "mvdsv-0.35.tar.gz").is_file(),
        reason=f"no shared folder with the mvdsv source at {SHARED}",
    ),
    pytest.mark.skipif(
        bool(missing_build_tools()), reason=f"missing build tools: {missing_build_tools()}"
    ),
    pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs"),
]


def _servers() -> list[str]:
    out = subprocess.run(["pgrep", "-f", "simsrv/testbed/.*/mvdsv"], capture_output=True, text=True)
    return out.stdout.split()


@pytest.fixture(scope="module")
def sixteen_clients():
    from simsrv.testbed.run import TestbedConfig, run_testbed

    before = _servers()
    result = run_testbed(
        TestbedConfig(clients=16, map="dm1", duration_s=5.0, warmup_s=1.0, port=27710)
    )
    return result, before


def test_every_client_begins_and_moves(sixteen_clients):
    result, _ = sixteen_clients
    clients = result.clients
    assert clients["began"].all()
    assert (clients["origin_updates"] > 10).all()
    assert (clients["distance_travelled_units"] > 0).all()  # their origins change
    assert result.summary["clients_began"] == 16
    assert (clients["parse_errors"] == 0).all()


def test_server_reads_the_packets_the_clients_sent(sixteen_clients):
    result, _ = sixteen_clients
    sent = result.summary["packets_sent_by_clients"]
    read = int(result.frames.loc[result.frames["measured"], "packets"].sum())
    assert sent == pytest.approx(16 * 77 * 5, rel=0.02)
    assert read == pytest.approx(sent, rel=0.01)
    s = result.summary
    assert s["frames_per_s"] > 0 and s["messages_per_frame"] >= 1.0
    assert s["replies_per_s"] == pytest.approx(s["messages_per_s"], rel=0.02)
    shares = s["cpu_share"]
    assert sum(shares.values()) == pytest.approx(1.0, abs=1e-9)
    frames = result.frames[result.frames["measured"]]
    assert (frames["cpu_us"] > 0).all()
    assert frames["moves"].sum() == pytest.approx(read, rel=0.01)


def test_no_server_is_left_behind(sixteen_clients):
    _, before = sixteen_clients
    time.sleep(0.2)
    assert _servers() == before == []


def test_cli_runs_end_to_end_and_interrupt_leaves_nothing(tmp_path):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmd = [
        sys.executable,
        "-m",
        "simsrv",
        "testbed",
        "--clients",
        "4",
        "--duration-s",
        "30",
        "--port",
        "27711",
        "--json",
        "--out",
        str(tmp_path / "run"),
    ]
    process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not _servers():
        time.sleep(0.1)
    assert _servers(), "the server did not start"
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=20)
    assert process.returncode == 130
    assert err.decode().strip().splitlines()[-1] == "simsrv: interrupted"
    time.sleep(0.3)
    assert _servers() == []


def test_cli_short_run_json(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "simsrv",
            "testbed",
            "--clients",
            "2",
            "--duration-s",
            "1",
            "--warmup-s",
            "0.5",
            "--port",
            "27712",
            "--json",
            "--out",
            str(tmp_path / "r"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["clients_began"] == 2
    assert (tmp_path / "r" / "frames.parquet").is_file()
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["label"] == summary["label"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--clients", "300"], "testbed --clients must be in [1, 256]"),
        (["--clients", "257"], "testbed --clients must be in [1, 256]"),
        (["--clients-impl", "java"], "testbed --clients-impl must be one of c, python"),
        (["--map", "nomap"], "testbed --map: no map 'nomap'"),
        (["--shared", "/nonexistent"], "testbed --shared: the server source is not at"),
        (["--phases", "sideways"], "testbed --phases must be one of"),
        (["--quota-us", "10"], "testbed --quota-us must be >= 1000"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    out = subprocess.run(
        [sys.executable, "-m", "simsrv", "testbed", "--duration-s", "1", "--port", "27713", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], out.stderr


def test_busy_port_is_refused(tmp_path):
    import socket

    from simsrv.testbed.run import TestbedConfig, run_testbed

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 27714))
        with pytest.raises(InputError, match="--port 27714 is busy"):
            run_testbed(TestbedConfig(clients=1, duration_s=1, port=27714))


@pytest.mark.skipif(
    not Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists()
    or not os.access("/sys/fs/cgroup/cpu", os.W_OK),
    reason="no writable cgroup v1 cpu controller",
)
def test_a_cpu_quota_throttles_the_server_and_its_group_is_removed():
    from simsrv.testbed.run import TestbedConfig, run_testbed

    result = run_testbed(
        TestbedConfig(
            clients=32, duration_s=2.0, warmup_s=0.5, port=27715, quota_us=1000, period_us=20_000
        )
    )
    s = result.summary
    assert s["quota_share"] == pytest.approx(0.05)
    assert s["throttled_periods"] > 0
    # 32 clients need ~20 % of this CPU (docs/testbed.md): 5 % answers a fraction of them
    # (16 clients, ~10 %, got 0.94-0.96 of their packets answered: too close to tell)
    assert s["reply_ratio"] < 0.8
    leftovers = [
        p
        for p in Path("/sys/fs/cgroup/cpu").iterdir()
        if p.name.startswith(f"simsrv-testbed-{os.getpid()}-")
    ]
    assert leftovers == []
