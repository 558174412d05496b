"""What a fresh process pays for its first simulation: simsrv's compiled functions come from
numba's cache without a compilation, a refresh of numba's context or an import of numba's
implementation of numpy (``simsrv.core.compiled_loading``), and a run on a map without BSP
geometry or a visibility distance does not import scipy's spatial or sparse modules (~0.2 s
of imports)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import simsrv.core.compiled_loading as compiled_loading

PROBE = textwrap.dedent(
    """
    import hashlib, json, sys
    from numba.core import base, dispatcher
    from simsrv import KEEP_ALL, load_scenario
    from simsrv.pipeline.simulation import simulate

    refreshes = []
    refresh = base.BaseContext.refresh
    def counted(self):
        refreshes.append(type(self).__name__)
        return refresh(self)
    base.BaseContext.refresh = counted
    loads = []
    compile_ = dispatcher.Dispatcher.compile
    def recorded(self, sig):
        known = len(self.overloads)
        entry = compile_(self, sig)
        if len(self.overloads) > known:
            loads.append([self.py_func.__module__, type(self._cache).__name__])
        return entry
    dispatcher.Dispatcher.compile = recorded
    scenario = load_scenario(None, sys.argv[1:])
    out = simulate(scenario, keep_frames=KEEP_ALL)
    print(json.dumps({
        "frames": hashlib.sha256(out.frames.to_csv().encode()).hexdigest(),
        "loads": loads, "refreshes": refreshes,
        "scipy": sorted(m for m in sys.modules if m.startswith(("scipy.spatial", "scipy.sparse"))),
        "numpy_in_numba": [m for m in ("numba.np.arrayobj", "scipy.linalg") if m in sys.modules],
    }))
    """
)


@pytest.fixture(scope="module")
def runs() -> list[dict]:
    """Two fresh processes each simulating the default scenario (cube-160) for 0.3 s."""
    argv = [sys.executable, "-c", PROBE, "run.duration_s=0.2", "run.warmup_s=0.1"]
    return [
        json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
        for _ in range(2)
    ]


@pytest.mark.skipif(
    not compiled_loading._TESTED, reason="compiled_loading is off with this numba release"
)
def test_a_second_fresh_process_loads_every_function_from_the_cache_without_a_refresh(runs):
    """The first process may compile (an empty cache); the second loads every compiled
    function simsrv calls from the cache (a compilation would refresh numba's context)."""
    assert runs[1]["frames"] == runs[0]["frames"]
    assert len(runs[1]["loads"]) >= 5  # the world's and the client stream's functions
    assert {cache for _, cache in runs[1]["loads"]} == {"FastLoadingCache"}
    assert runs[1]["refreshes"] == []
    # nor imports numba's implementation of numpy (nor scipy.linalg, which it imports)
    assert runs[1]["numpy_in_numba"] == []


def test_a_run_on_the_cube_map_imports_neither_scipy_spatial_nor_sparse(runs):
    assert runs[0]["scipy"] == [] and runs[1]["scipy"] == []
