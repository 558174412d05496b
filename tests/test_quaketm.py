"""QuakeTM, the lock-based multithreaded QuakeWorld server, built from the shared GPL source
with our patch and driven by simsrv's synthetic clients on two threads.

Skips with a reason without the shared folder's ``qw-parallel/`` or a compiler."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from simsrv.testbed import protocol as qw
from simsrv.testbed.build import default_shared_root, missing_build_tools
from simsrv.testbed.clients import ClientPlan, PhasePattern
from simsrv.testbed.loadgen import compiler, run_loadgen
from simsrv.testbed.quaketm import archive_path, build_quaketm, run_args
from simsrv.testbed.server import ServerProcess, port_is_free, prepare_basedir

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


def test_every_client_signs_on_and_gets_a_reply_each_frame_on_two_threads(fine_build, tmp_path):
    shared = _shared()
    if not port_is_free(PORT):
        pytest.skip(f"port {PORT} is taken")
    basedir = prepare_basedir(tmp_path / "server", shared, "dm1", fine_build.max_clients)
    table = qw.load_checksum_table(
        (fine_build.source / "server" / "common.c").read_text(encoding="latin-1")
    )
    plan = ClientPlan(CLIENTS, RATE_HZ, PhasePattern.parse("independent"), seed=1)
    with ServerProcess(
        fine_build, basedir, PORT, tmp_path / "frames.bin", args=run_args(2, FRAME_S)
    ) as server:
        run = run_loadgen(
            plan, PORT, table, warmup_s=1.0, duration_s=2.0, signon_timeout_s=20.0,
            workdir=tmp_path,
        )  # fmt: skip
        assert server.exit_code_so_far() is None, server.last_log_line()
    assert all(log.began_at is not None for log in run.logs)
    start, end = run.window
    for log in run.logs:
        moves = np.array(log.move_times)
        replies = np.array(log.reply_times)
        assert ((moves >= start) & (moves < end)).sum() > 0.8 * RATE_HZ * (end - start)
        # the server replies once per client per frame at a fixed period: ~(end - start) /
        # FRAME_S replies, far fewer than the moves
        in_window = ((replies >= start) & (replies < end)).sum()
        assert 0.7 * (end - start) / FRAME_S <= in_window <= 1.3 * (end - start) / FRAME_S
        assert log.parse_errors == 0
    assert "Running with 2 threads" in Path(server.log_path).read_text(errors="replace")


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
