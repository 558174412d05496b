"""numba's compiled functions get symbol names no other process gives (simsrv.core.symbol_ids):
code cached by different processes and loaded by one never calls another function's code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from simsrv.core.symbol_ids import ProcessUniqueIds

KERNELS = '''
import numpy as np
from simsrv.core.compiled import compiled


@compiled
def ordered(values):
    """np.sort: numba's quicksort, make_quicksort_impl.<locals>.partition ..."""
    return np.sort(values)


@compiled
def order(values):
    """np.argsort: numba's quicksort too, closures of the same names and argument types."""
    return np.argsort(values)


@compiled
def pad(value):
    """Compiled once per argument type: takes one function id per compile."""
    return value
'''

CALLER = textwrap.dedent(
    """
    import json, re, sys
    import numpy as np
    import kernels

    pads, names = int(sys.argv[1]), sys.argv[2:]
    for value in (1, 1.0, True, 1j)[:pads]:
        kernels.pad(value)
    values = np.random.default_rng(1).permutation(40).astype(np.int64)
    out = {}
    for name in names:
        function = getattr(kernels, name)
        expected = np.sort(values) if name == "ordered" else np.argsort(values)
        right = bool(np.array_equal(function(values), expected))
        (result,) = function.overloads.values()
        symbols = [f.name for f in result.library._get_module_for_linking().functions]
        out[name] = {
            "right": right,
            "hits": sum(function.stats.cache_hits.values()),
            "ids": sorted(set(re.findall(r"partitionB\\d+(v\\d+)", " ".join(symbols)))),
        }
    print(json.dumps(out))
    """
)


def _run(tmp_path, *args: object) -> dict:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]),
        "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
    }
    done = subprocess.run(
        [sys.executable, "-c", CALLER, *map(str, args)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def test_code_cached_by_two_processes_runs_its_own_sort_when_loaded_together(tmp_path):
    """One process caches ``order`` (np.argsort), another ``ordered`` (np.sort) after three
    other compiles: with numba's counter of ids (from 1 in every process), numba 0.68 gave both
    quicksort partitions the id 12, so the same symbol, and a process loading both ran the
    first one loaded for both (a wrong argsort, or a wrong sort)."""
    (tmp_path / "kernels.py").write_text(KERNELS)
    argsorted = _run(tmp_path, 0, "order")["order"]
    sorted_ = _run(tmp_path, 3, "ordered")["ordered"]
    assert argsorted["right"] and sorted_["right"]
    assert argsorted["hits"] == sorted_["hits"] == 0
    for names in (("ordered", "order"), ("order", "ordered")):
        loaded = _run(tmp_path, 0, *names)
        assert all(loaded[name]["hits"] == 1 for name in names)
        assert all(loaded[name]["right"] for name in names), loaded
    assert set(argsorted["ids"]).isdisjoint(sorted_["ids"])


def test_two_processes_compiling_the_same_functions_give_them_different_ids(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "kernels.py").write_text(KERNELS)
    first, second = (_run(tmp_path / name, 0, "order")["order"] for name in ("a", "b"))
    assert first["ids"] and second["ids"] and first["ids"] != second["ids"]


def test_ids_do_not_repeat_within_a_process():
    ids = ProcessUniqueIds()
    drawn = [next(ids) for _ in range(10_000)]
    assert len(set(drawn)) == len(drawn) and all(i > 0 for i in drawn)
