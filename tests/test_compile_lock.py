"""One compile per machine (``simsrv.core.compile_lock``): a process that misses a function's
cache while another compiles it waits and loads the other's code; a failed compile releases
its lock; a lock held too long is given up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import numba
import pytest
from numba.core import caching

import simsrv.core.compile_lock as compile_lock
import simsrv.core.compiled_loading as compiled_loading
from simsrv.core.compile_lock import LOCKS, CompileLocks
from simsrv.core.compiled import compiled

pytestmark = [
    pytest.mark.skipif(compile_lock.fcntl is None, reason="no fcntl (Windows): nothing is locked"),
    pytest.mark.skipif(
        not compiled_loading._TESTED,
        reason=f"numba {numba.__version__} is not a release compiled_loading was tested against",
    ),
]

HOLD = textwrap.dedent(
    """
    import sys, time
    from simsrv.core.compile_lock import LOCKS
    assert LOCKS.acquire(sys.argv[1])
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
    """
)

KERNEL = """
from simsrv.core.compiled import compiled


@compiled
def triple(x):
    return 3 * x
"""

CALLER = textwrap.dedent(
    """
    import json, time
    from kernel import triple
    started = time.monotonic()
    value = triple(7)
    print(json.dumps({
        "value": value,
        "hits": sum(triple.stats.cache_hits.values()),
        "misses": sum(triple.stats.cache_misses.values()),
        "waited_s": time.monotonic() - started,
    }))
    """
)


def _holder(path, seconds):
    """A process holding the lock at ``path`` for ``seconds`` (once it says so)."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline().strip() == "held"
    return process


def test_a_lock_is_counted_in_the_process_that_holds_it(tmp_path):
    locks, path = CompileLocks(), str(tmp_path / "f.nbi.lock")
    assert locks.acquire(path) and locks.acquire(path)  # a second signature: no self-deadlock
    locks.release(path)
    assert locks.holds(path)
    locks.release(path)
    assert not locks.holds(path)
    locks.release(path)  # releasing a lock not held does nothing
    assert locks.acquire(path)
    locks.release(path)


def test_a_process_waits_for_a_lock_another_holds_then_takes_it(tmp_path):
    path = tmp_path / "f.nbi.lock"
    holder = _holder(path, 1.0)
    try:
        started = time.monotonic()
        locks = CompileLocks()
        assert locks.acquire(str(path))
        assert time.monotonic() - started > 0.5  # it waited for the holder to end
        locks.release(str(path))
    finally:
        holder.wait(timeout=30)


def test_a_lock_held_past_the_wait_is_given_up(tmp_path, monkeypatch):
    path = tmp_path / "f.nbi.lock"
    holder = _holder(path, 30.0)
    try:
        monkeypatch.setattr(compile_lock, "WAIT_S", 0.3)
        locks = CompileLocks()
        assert not locks.acquire(str(path)) and not locks.holds(str(path))
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_a_failed_compile_releases_its_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(caching.config, "CACHE_DIR", str(tmp_path))

    def untypable(x):
        return x + "one"  # an int plus a str: numba refuses to type it

    function = compiled(untypable)
    with pytest.raises(numba.core.errors.TypingError):
        function(1)
    path = function._cache._lock_path()
    assert os.path.exists(path) and not LOCKS.holds(path)


def test_a_second_process_loads_what_the_first_compiles_instead_of_compiling_it(tmp_path):
    """The test holds the function's lock (as a process compiling it would) while a second
    process calls the function: that process waits, then loads the code the test compiled."""
    (tmp_path / "kernel.py").write_text(KERNEL)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]),
        "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
    }
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(caching.config, "CACHE_DIR", str(tmp_path / "cache"))
            from kernel import triple  # noqa: PLC0415 - the module written above

            path = triple._cache._lock_path()
            assert LOCKS.acquire(path)
            second = subprocess.Popen(
                [sys.executable, "-c", CALLER],
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                text=True,
            )
            time.sleep(1.0)  # the second process starts and waits for the lock
            assert triple(7) == 21  # compiled here, saved, the compile's own hold released
            LOCKS.release(path)
            out, _ = second.communicate(timeout=120)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("kernel", None)
    run = json.loads(out)
    assert run["value"] == 21
    assert run["hits"] == 1 and run["misses"] == 0  # loaded, not compiled
    assert run["waited_s"] > 0.3
