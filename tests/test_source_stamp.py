"""The stamp of the compiled source in every cached function's key (simsrv.core.source_stamp):
a change to a compiled function's callee in another file makes the caller's cached code stale,
which numba alone does not see."""

from __future__ import annotations

from pathlib import Path

from simsrv.core import source_stamp
from simsrv.core.compiled_loading import FastLoadingCache
from simsrv.core.uninitialised import POISON


def _tree(root: Path) -> None:
    (root / "machine").mkdir(parents=True)
    (root / "machine" / "engine.py").write_text("R_SIGNALS = 28\n")
    (root / "frame_steps").mkdir()
    (root / "frame_steps" / "kernels.py").write_text("from simsrv.machine import engine\n")
    (root / "cli").mkdir()
    (root / "cli" / "main.py").write_text("print('hello')\n")


def test_a_change_to_a_compiled_package_changes_the_stamp(tmp_path):
    _tree(tmp_path)
    before = source_stamp.source_stamp(tmp_path, ("machine", "frame_steps"))
    (tmp_path / "machine" / "engine.py").write_text("R_SIGNALS = 29\n")  # a callee's constant
    assert source_stamp.source_stamp(tmp_path, ("machine", "frame_steps")) != before


def test_a_new_module_or_a_moved_one_changes_the_stamp(tmp_path):
    _tree(tmp_path)
    before = source_stamp.source_stamp(tmp_path, ("machine", "frame_steps"))
    (tmp_path / "machine" / "rule.py").write_text("")
    added = source_stamp.source_stamp(tmp_path, ("machine", "frame_steps"))
    assert added != before
    (tmp_path / "machine" / "rule.py").rename(tmp_path / "frame_steps" / "rule.py")
    assert source_stamp.source_stamp(tmp_path, ("machine", "frame_steps")) not in (before, added)


def test_a_change_outside_the_compiled_packages_keeps_the_cache(tmp_path):
    _tree(tmp_path)
    before = source_stamp.source_stamp(tmp_path, ("machine", "frame_steps"))
    (tmp_path / "cli" / "main.py").write_text("print('bye')\n")
    assert source_stamp.source_stamp(tmp_path, ("machine", "frame_steps")) == before


def test_every_cached_function_is_keyed_by_the_installed_source(monkeypatch):
    import simsrv

    root = Path(simsrv.__file__).resolve().parent
    assert source_stamp.source_stamp(root) == source_stamp.SOURCE_STAMP
    monkeypatch.setattr(
        "numba.core.caching.Cache._index_key", lambda self, sig, codegen: ("numba's key",)
    )
    key = FastLoadingCache._index_key(object.__new__(FastLoadingCache), None, None)
    assert key[0] == "numba's key" and key[-2:] == (source_stamp.SOURCE_STAMP, POISON)
