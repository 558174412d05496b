"""Compiled functions loaded from numba's cache the cheap way (``simsrv.core.compiled_loading``)
compute what they computed when compiled and stay linkable into new compilations (a fresh
process's loads: tests/test_fresh_process.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba.core import caching, codegen

import simsrv.core.compiled_loading as compiled_loading
from simsrv.core.compiled import borrowing, compiled
from simsrv.core.compiled_loading import FastLoadingCache, LazyLinkingLibrary

pytestmark = pytest.mark.skipif(
    not compiled_loading._TESTED,
    reason=f"numba {numba.__version__} is not a release compiled_loading was tested against",
)


def running_sums(values):
    """Allocates its result (numba's runtime) and loops: a typical simsrv kernel."""
    out = np.empty(len(values))
    total = 0.0
    for i in range(len(values)):
        total += values[i]
        out[i] = total
    return out


def scaled_in_place(values, factor):
    for i in range(len(values)):
        values[i] *= factor


def _library(dispatcher):
    (result,) = dispatcher.overloads.values()
    return result.library


def _cached_then_reloaded(function, tmp_path, monkeypatch, wrap=compiled):
    """``function`` compiled and cached in ``tmp_path``, then a second dispatcher of it that
    can only load that cache (as a new process would)."""
    monkeypatch.setattr(caching.config, "CACHE_DIR", str(tmp_path))
    first = wrap(function)
    return first, wrap(function)


@pytest.fixture(scope="module")
def reloaded(tmp_path_factory):
    """``running_sums`` compiled, and a second dispatcher of it loaded from that cache."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        first, again = _cached_then_reloaded(
            running_sums, tmp_path_factory.mktemp("cache"), monkeypatch
        )
        first(np.arange(3.0))
        again(np.arange(3.0))
    assert sum(again.stats.cache_hits.values()) == 1
    return first, again


@settings(max_examples=30, deadline=None)
@given(values=st.lists(st.floats(-1e6, 1e6), max_size=50))
def test_a_reloaded_function_computes_what_the_compiled_one_did(reloaded, values):
    first, again = reloaded
    array = np.array(values, dtype=np.float64)
    np.testing.assert_array_equal(again(array), first(array))


def test_a_cache_hit_is_loaded_lazily(tmp_path, monkeypatch):
    first, again = _cached_then_reloaded(running_sums, tmp_path, monkeypatch)
    expected = first(np.arange(6.0))
    assert isinstance(again._cache, FastLoadingCache)
    np.testing.assert_array_equal(again(np.arange(6.0)), expected)
    assert sum(again.stats.cache_hits.values()) == 1
    assert sum(again.stats.cache_misses.values()) == 0
    library = _library(again)
    assert isinstance(library, LazyLinkingLibrary)
    assert library._pending_bitcode is not None  # its linkable module not parsed


def test_a_helper_without_reference_counting_reloads_too(tmp_path, monkeypatch):
    first, again = _cached_then_reloaded(scaled_in_place, tmp_path, monkeypatch, borrowing)
    values = np.arange(4.0)
    first(values, 2.0)
    again(values, 0.5)
    np.testing.assert_array_equal(values, np.arange(4.0))
    assert sum(again.stats.cache_hits.values()) == 1
    assert isinstance(_library(again), LazyLinkingLibrary)


def test_a_reloaded_function_links_into_a_new_compilation(tmp_path, monkeypatch):
    first, again = _cached_then_reloaded(running_sums, tmp_path, monkeypatch)
    first(np.arange(5.0))
    again(np.arange(5.0))
    library = _library(again)

    @numba.njit
    def doubled(values):
        return again(values) * 2.0

    np.testing.assert_array_equal(doubled(np.arange(5.0)), 2.0 * first(np.arange(5.0)))
    assert library._pending_bitcode is None  # parsed when the caller linked it
    assert library._get_module_for_linking() is library._shared_module
    # any other symbol than the entry point is looked up in the parsed module
    assert library.get_pointer_to_function("no such symbol") == 0


def test_an_unknown_cache_layout_falls_back_to_numbas_own_loading(tmp_path, monkeypatch):
    first, again = _cached_then_reloaded(running_sums, tmp_path, monkeypatch)
    expected = first(np.arange(3.0))
    monkeypatch.setattr(compiled_loading, "_known_payload", lambda payload: False)
    np.testing.assert_array_equal(again(np.arange(3.0)), expected)
    assert sum(again.stats.cache_hits.values()) == 1
    library = _library(again)
    assert type(library) is codegen.JITCodeLibrary


def test_install_leaves_numbas_loading_with_an_untested_numba(monkeypatch):
    monkeypatch.setattr(compiled_loading, "_TESTED", False)
    function = numba.njit(cache=True)(running_sums)
    cache = function._cache
    assert compiled_loading.install(function) is function
    assert type(function._cache) is caching.FunctionCache and function._cache is cache


def test_install_leaves_a_dispatcher_without_numbas_cache_alone():
    function = numba.njit(cache=False)(running_sums)
    cache = function._cache
    assert compiled_loading.install(function) is function
    assert function._cache is cache and not isinstance(cache, FastLoadingCache)


KERNELS = '''
import numpy as np
from simsrv.core.compiled import compiled


@compiled
def peak_and_sums(values):
    """numpy's max and cumsum: numba implements them in numba.np.arraymath."""
    return values.max(), np.cumsum(values)
'''

CALLER = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from kernels import peak_and_sums

    peak, sums = peak_and_sums(np.array([3.0, -1.0, 7.5, 2.0]))
    try:
        peak_and_sums(np.zeros(0))
        error = None
    except ValueError as raised:  # raised by numba's implementation of max
        error = str(raised)
    print(json.dumps({
        "peak": peak, "sums": sums.tolist(), "error": error,
        "hits": sum(peak_and_sums.stats.cache_hits.values()),
        "imported": sorted(m for m in ("numba.np.arraymath", "scipy.linalg") if m in sys.modules),
    }))
    """
)


def test_a_fresh_process_runs_numbas_numpy_code_without_importing_its_modules(tmp_path):
    """The environments of numba's numpy implementations are rebuilt without their modules:
    results and the errors those implementations raise are the same as when compiled."""
    (tmp_path / "kernels.py").write_text(KERNELS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", CALLER],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        for _ in range(2)
    ]
    compiled_run, loaded_run = runs
    assert compiled_run["hits"] == 0 and compiled_run["imported"] == [
        "numba.np.arraymath",
        "scipy.linalg",
    ]
    assert loaded_run["hits"] == 1 and loaded_run["imported"] == []
    assert loaded_run["peak"] == compiled_run["peak"] == 7.5
    assert loaded_run["sums"] == compiled_run["sums"] == [3.0, 2.0, 9.5, 11.5]
    assert loaded_run["error"] == compiled_run["error"] and "zero-size" in loaded_run["error"]
