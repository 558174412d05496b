"""Compiled functions still work where numba cannot keep its on-disk cache (a read-only
install with no writable cache directory)."""

from __future__ import annotations

import numpy as np
from numba.core import caching

from simsrv.compiled import compiled


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
    assert function._cache.__class__.__name__ == "FunctionCache"
    assert any(tmp_path.rglob("*.nbi"))  # the index of the cached machine code
