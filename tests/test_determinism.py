"""A run is a function of its scenario and seed, not of what ran before.

Every shipped scenario runs in fresh processes (``simsrv run --json``) under three states of
numba's on-disk cache, and gives the same JSON (wall time and version aside):

* **warmed by others**: the test suite's own cache, filled by the processes that ran before
  (the suite's, and each scenario's predecessors here), so the functions a run calls were
  compiled by different processes, and what is missing is compiled in the run itself;
* **fully warm**: the same cache once every scenario has run: the process loads everything;
* **empty**: a fresh cache, the process compiles every function it calls.  The default suite
  gives an empty cache to the cluster scenario (the one whose frame durations once depended on
  the cache, from frame 51 on; it calls the most functions); ``-m slow`` gives one to every
  scenario, the scale ones included.

A scenario that needs id's GPL maps is left out where they are absent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from simsrv.machine.invariants import CHECKS
from tests.scenario_files import GPL_MAPS, HEAVY, SCENARIOS, needs_gpl_maps

ROOT = Path(__file__).resolve().parents[1]
RUN = ["--set", "run.duration_s=1.5", "--set", "run.warmup_s=0.2"]
"""Long enough for ~30-150 frames: the cluster runs that once depended on the cache differed
from frame 51 on."""
VOLATILE = ("wall_time_s", "simsrv_version")
WORKERS = 2


def _available(paths) -> list[str]:
    return [p for p in paths if GPL_MAPS.is_dir() or not needs_gpl_maps(p)]


SHIPPED = _available([p for p in SCENARIOS if p not in HEAVY])


def _run(path: str, cache: Path | None) -> dict:
    """``simsrv run PATH --json`` in a fresh process, with numba's cache in ``cache`` (None:
    the suite's own)."""
    env = {**os.environ, "PYTHONHASHSEED": "random"}
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = str(cache)
    done = subprocess.run(
        [sys.executable, "-m", "simsrv", "run", path, "--json", *RUN],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"{path}: exit {done.returncode}: {done.stderr[-2000:]}"
    result = json.loads(done.stdout)
    for key in VOLATILE:
        result.pop(key)
    return result


def _sequence(paths: list[str], cache: Path | None) -> dict[str, dict]:
    """Every scenario of ``paths`` in its own fresh process, ``WORKERS`` at a time, all on the
    cache ``cache``."""
    with ThreadPoolExecutor(WORKERS) as pool:
        return dict(zip(paths, pool.map(lambda p: _run(p, cache), paths), strict=True))


def _differences(first: dict, second: dict) -> list[str]:
    return sorted(k for k in first.keys() | second.keys() if first.get(k) != second.get(k))


EMPTY_CACHE = [p for p in SHIPPED if p.startswith("scenarios/cluster/nodes4")]


@pytest.fixture(scope="module")
def shared_cache() -> tuple[dict, dict]:
    """(warmed by others, fully warm): every scenario on the suite's cache, twice."""
    return _sequence(SHIPPED, None), _sequence(SHIPPED, None)


@pytest.fixture(scope="module")
def empty_cache(tmp_path_factory) -> dict:
    return {p: _run(p, tmp_path_factory.mktemp("empty-cache")) for p in EMPTY_CACHE}


@pytest.mark.parametrize("path", SHIPPED)
def test_a_scenario_gives_the_same_json_on_every_cache_state(shared_cache, empty_cache, path):
    warmed, warm = shared_cache
    assert warmed[path]["checks"] == dict.fromkeys(CHECKS, True)
    assert _differences(warmed[path], warm[path]) == []
    if path in empty_cache:
        assert _differences(empty_cache[path], warm[path]) == []


def test_the_empty_cache_state_is_not_skipped_silently():
    assert EMPTY_CACHE == ["scenarios/cluster/nodes4-cpus2-640.toml"]


@pytest.mark.slow
@pytest.mark.parametrize("path", _available(SCENARIOS))
def test_a_scenario_on_its_own_empty_cache_gives_the_json_of_the_suites_cache(tmp_path, path):
    empty = _run(path, tmp_path / "cache")
    assert empty["checks"] == dict.fromkeys(CHECKS, True)
    assert _differences(empty, _run(path, None)) == []
