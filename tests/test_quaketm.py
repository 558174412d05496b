"""QuakeTM, the lock-based multithreaded QuakeWorld server, built from the shared GPL source
with our patch and measured with simsrv's synthetic clients on two threads.

Skips with a reason without the shared folder's ``qw-parallel/`` or a compiler."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from simsrv.testbed.build import default_shared_root, missing_build_tools
from simsrv.testbed.loadgen import compiler
from simsrv.testbed.quaketm import archive_path, build_quaketm
from simsrv.testbed.run import TestbedConfig, run_testbed
from simsrv.testbed.server import port_is_free

CLIENTS, RATE_HZ, FRAME_S = 8, 40.0, 0.05
PORT = 27640


def _shared():
    from simsrv.testbed.build import SharedFolder

    shared = SharedFolder(default_shared_root())
    if not archive_path(shared).is_file() or not shared.progs.is_file():
        pytest.skip(f"no QuakeTM source or GPL progs in {shared.root} (the shared folder)")
    if [t for t in missing_build_tools() if t != "cmake"] or compiler() is None:
        pytest.skip("no C compiler, make or patch on this machine")
    if not shared.map_file("dm1").is_file():
        pytest.skip("no dm1 in the shared maps")
    return shared


@pytest.fixture(scope="module")
def fine_build():
    return build_quaketm(_shared(), "fine")


def test_a_two_thread_fine_run_signs_every_client_on_and_records_each_thread(fine_build, tmp_path):
    """``simsrv testbed --server quaketm-fine --threads 2``: every client plays, the server
    replies once per client per frame at its fixed period, and each frame's request stage
    has a record per thread whose parts add up to the team's time."""
    _shared()
    if not port_is_free(PORT):
        pytest.skip(f"port {PORT} is taken")
    config = TestbedConfig(
        server="quaketm-fine", threads=2, clients=CLIENTS, rate_hz=RATE_HZ, frame_s=FRAME_S,
        duration_s=2.0, warmup_s=1.0, port=PORT, server_cpu=None,
    )  # fmt: skip
    result = run_testbed(config, workdir=tmp_path)
    s = result.summary
    assert s["clients_began"] == CLIENTS
    assert s["frames_per_s"] == pytest.approx(1 / FRAME_S, rel=0.05)
    # one reply per client per frame, far fewer than the moves
    assert s["replies_per_s"] == pytest.approx(CLIENTS / FRAME_S, rel=0.1)
    assert s["messages_per_s"] == pytest.approx(CLIENTS * RATE_HZ, rel=0.1)
    assert (result.clients["parse_errors"] == 0).all()
    threads = result.threads[result.threads["measured"]]
    busy = result.frames[result.frames["measured"] & (result.frames["packets"] > 0)]
    assert len(busy) > 0 and set(threads["frame"]) == set(busy["frame"])
    assert (threads.groupby("frame")["thread"].apply(sorted).map(tuple) == (0, 1)).all()
    # each packet's tasks: one task per client with packets, every packet processed once
    per_frame = threads.groupby("frame")[["tasks", "packets"]].sum()
    assert (per_frame["tasks"] == busy.set_index("frame")["tasks"]).all()
    assert (per_frame["packets"] == busy.set_index("frame")["packets"]).all()
    # the fine build takes global_lock around SV_RunCmd's five sections (LOCK_COARSE)
    assert s["request"]["lock_acquires_per_packet.global"] >= 4.5
    parts = ("wake", "work", "lock_wait", "idle_end", "overhead", "join")
    assert sum(s["request"][f"{k}_share"] for k in parts) == pytest.approx(1.0, abs=1e-9)
    assert (threads["overhead_us"] >= -1.0).all()  # within the clocks' resolution
    assert not [line for line in _processes() if str(fine_build.binary) in line]


def _processes() -> list[str]:
    import subprocess

    return subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines()


def test_an_unknown_variant_is_one_line():
    from simsrv.core.errors import InputError
    from simsrv.testbed.build import SharedFolder

    with pytest.raises(InputError, match="QuakeTM variants are serial, global, coarse, fine"):
        build_quaketm(SharedFolder(Path("/nonexistent")), "medium")


def test_the_build_is_kept_per_variant(fine_build):
    assert fine_build.binary.is_file() and fine_build.variant == "fine"
    again = build_quaketm(_shared(), "fine")
    assert again.binary == fine_build.binary
    assert shutil.which(str(again.binary)) is not None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"threads": 2}, "--threads must be in \\[1, 1\\] for quaketm-serial"),
        ({"server": "quaketm-fine", "clients_impl": "python"}, "--clients-impl python is for"),
        ({"server": "quaketm-fine", "quota_us": 2000}, "--quota-us applies to mvdsv only"),
        ({"server": "quaketm-fine", "bind": True}, "--bind binds QuakeTM's threads"),
        ({"server": "mvdsv", "threads": 2}, "--threads applies to QuakeTM"),
    ],
)
def test_a_quaketm_condition_is_checked_before_anything_is_built(fields, message):
    from simsrv.core.errors import InputError

    config = TestbedConfig(**{"server": "quaketm-serial", **fields})
    with pytest.raises(InputError, match=message):
        config.checked()
