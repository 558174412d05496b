"""Compiled functions still work where numba cannot keep its on-disk cache (a read-only
install with no writable cache directory), and compute what the numpy code they replace did."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba.core import caching

from simsrv.core.compiled import compiled
from simsrv.world.maps.base import PLAYER_MAXS, PLAYER_MINS, GameMap


def total(values):
    out = 0.0
    for v in values:
        out += v
    return out


def test_without_a_writable_cache_directory_functions_compile_uncached(monkeypatch):
    def read_only(self):
        raise PermissionError(30, "Read-only file system", self.get_cache_path())

    monkeypatch.setattr(caching._CacheLocator, "ensure_cache_path", read_only)
    function = compiled(total)
    assert function(np.arange(5.0)) == 10.0
    assert function._cache.__class__.__name__ == "NullCache"


def test_with_a_cache_directory_functions_are_cached(tmp_path, monkeypatch):
    monkeypatch.setattr(caching.config, "CACHE_DIR", str(tmp_path))
    function = compiled(total)
    assert function(np.arange(4.0)) == 6.0
    assert isinstance(function._cache, caching.FunctionCache)  # simsrv.core.compiled_loading's
    assert any(tmp_path.rglob("*.nbi"))  # the index of the cached machine code


@settings(max_examples=80, deadline=None)
@given(
    points=st.lists(
        st.tuples(*[st.sampled_from([-40.0, -16.0, 0.0, 16.0, 24.0, 100.0, 224.0, 240.0])] * 3),
        min_size=1,
        max_size=40,
    )
)
def test_the_compiled_extent_test_is_the_numpy_one(points):
    """Boxes exactly touching the extent's faces are inside (strict comparisons)."""
    origins = np.array(points)
    low, high = np.array([0.0, 0.0, 0.0]), np.array([256.0, 256.0, 256.0])
    expected = np.any(origins + PLAYER_MINS < low, axis=1) | np.any(
        origins + PLAYER_MAXS > high, axis=1
    )
    empty = GameMap(
        kind="test",
        extent_min=low,
        extent_max=high,
        solid_min=np.zeros((0, 3)),
        solid_max=np.zeros((0, 3)),
        room_min=np.zeros((0, 3)),
        room_max=np.zeros((0, 3)),
        room_visible=np.zeros((0, 0), dtype=bool),
        spawn_points=np.zeros((0, 3)),
    )
    np.testing.assert_array_equal(empty.in_solid(origins), expected)
