"""Arrays allocated without initial values come from one place, which poison mode fills
(``SIMSRV_POISON``): a run that reads memory it never wrote gives another result under it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from simsrv.core.uninitialised import POISON_VARIABLE, empty, empty_like, poison_byte

ROOT = Path(__file__).resolve().parents[1]
READERS_OF_A_REAL_SERVER = "testbed"
"""simsrv/testbed parses a real server's records (zero-length arrays only): no simulation."""


def test_no_module_allocates_an_array_numpy_leaves_unwritten_but_through_one_place():
    offenders = []
    for path in sorted((ROOT / "simsrv").rglob("*.py")):
        if path.name == "uninitialised.py" or READERS_OF_A_REAL_SERVER in path.parts:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\bnp\.empty(_like)?\(|numpy\.empty", line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}")
    assert offenders == []


@pytest.mark.parametrize(
    ("text", "byte"), [(None, -1), ("", -1), (" ", -1), ("0xFF", 255), ("127", 127), ("0", 0)]
)
def test_the_poison_byte_is_read_from_the_variable(text, byte):
    assert poison_byte(text) == byte


@pytest.mark.parametrize("text", ["256", "-1", "x", "0x100"])
def test_a_poison_that_is_not_a_byte_stops_the_process_in_one_line(text):
    with pytest.raises(SystemExit) as stop:
        poison_byte(text)
    assert str(stop.value) == f"{POISON_VARIABLE}: {text!r} is not a byte (0-255, e.g. 0xFF)"


def test_without_poison_the_arrays_are_numpys():
    array = empty((3, 2), np.int32)
    assert array.shape == (3, 2) and array.dtype == np.int32 and array.flags.c_contiguous
    assert empty_like(np.zeros((2, 5), np.int8)).shape == (2, 5)


PROBE = """
import json, numpy as np
from simsrv.core.compiled import compiled
from simsrv.core.uninitialised import empty, empty_like

@compiled
def allocate(n):
    return empty(n), empty((n, 2), np.int64), empty_like(np.zeros(n, np.int32)), empty(n, np.bool_)

floats, ints, like, flags = allocate(3)
print(json.dumps({
    "python": empty(2).tobytes().hex() + empty((1, 2), np.int16).tobytes().hex(),
    "compiled": [floats.tobytes().hex(), ints.tobytes().hex(), like.tobytes().hex(),
                 flags.tobytes().hex()],
}))
"""


def test_poison_mode_fills_every_array_in_python_and_compiled_code(tmp_path):
    env = {**os.environ, POISON_VARIABLE: "0xA5", "NUMBA_CACHE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["python"] == "a5" * (16 + 4)
    assert out["compiled"] == ["a5" * 24, "a5" * 48, "a5" * 12, "a5" * 3]


def test_working_arrays_used_again_are_poisoned_again(monkeypatch):
    """A kept working array about to be used as a new one: poisoned in poison mode (a read of
    what its last use left then shows), left alone otherwise."""
    from simsrv.core import uninitialised

    kept = [np.arange(6, dtype=np.int64).reshape(2, 3), np.linspace(0.0, 1.0, 5)]
    monkeypatch.setattr(uninitialised, "POISON", -1)
    uninitialised.poisoned_again(*kept)
    assert kept[0].ravel().tolist() == list(range(6)) and kept[1][-1] == 1.0
    monkeypatch.setattr(uninitialised, "POISON", 0xFF)
    uninitialised.poisoned_again(*kept)
    assert (kept[0] == -1).all() and np.isnan(kept[1]).all()
