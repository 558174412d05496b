"""numpy's huge-page advice: off in simsrv's processes unless the user set numpy's switch."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from simsrv.core.huge_pages import NUMPY_VARIABLE

PROBE = """
import numpy as np
import simsrv.core.uninitialised  # noqa: F401  (turns the advice off unless the user chose)
core = getattr(np, "_core", None) or np.core
print(core.multiarray._set_madvise_hugepage(True))  # returns the setting it replaces
"""


def advice_after_import(variable: str | None) -> str:
    """Whether numpy advises huge pages once simsrv's allocation module is imported, in a
    fresh process with numpy's variable set to ``variable`` (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k != NUMPY_VARIABLE}
    if variable is not None:
        env[NUMPY_VARIABLE] = variable
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_advice_is_off_by_default():
    assert advice_after_import(None) == "False"


@pytest.mark.parametrize(("variable", "advice"), [("1", "True"), ("0", "False")])
def test_the_users_choice_stands(variable, advice):
    assert advice_after_import(variable) == advice
