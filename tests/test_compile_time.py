"""The compile time a run reports apart from its wall time (simsrv.core.compile_time): the
outermost compile counts once, nested compiles are inside it, a wait counts outside compiles;
the comparison's note sums it per worker process."""

from __future__ import annotations

import numba
import pandas as pd

from simsrv.cli.compare_command import compile_note
from simsrv.core import compile_time


def test_a_compile_counts_once_with_the_compiles_it_triggers():
    @numba.njit(cache=False)
    def inner(x):
        return x + 1

    @numba.njit(cache=False)
    def outer(x):
        return inner(x) * 2

    before = compile_time.compile_seconds()
    assert outer(3) == 8  # compiles outer, and inner inside it
    spent = compile_time.compile_seconds() - before
    assert 0 < spent < 60
    again = compile_time.compile_seconds()
    assert outer(4) == 10 and compile_time.compile_seconds() == again  # compiled: nothing


def test_a_wait_counts_only_outside_a_compile():
    before = compile_time.compile_seconds()
    compile_time.add_wait(1.5)
    assert compile_time.compile_seconds() == before + 1.5


def test_the_comparison_notes_each_worker_processes_compile_time():
    runs = pd.DataFrame({"process": [11, 11, 12, 12], "compile_time_s": [40.0, 0.0, 38.0, 2.0]})
    note = compile_note(runs)
    assert "40 s, 40 s in 2 worker process(es)" in note and "not in wall s" in note
    assert compile_note(runs.assign(compile_time_s=0.0)) == ""
