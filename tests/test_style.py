"""The code style is enforced by tools (ruff lint + format), as part of the test suite."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ["simsrv", "tests", "benchmarks", "mkdocs_hooks.py"]


@pytest.mark.skipif(
    shutil.which("ruff") is None and not (Path(sys.executable).parent / "ruff").exists(),
    reason="ruff is not installed (pip install -e '.[test]')",
)
@pytest.mark.parametrize("command", [["check"], ["format", "--check"]])
def test_ruff(command):
    ruff = Path(sys.executable).parent / "ruff"
    exe = str(ruff) if ruff.exists() else "ruff"
    proc = subprocess.run([exe, *command, *TARGETS], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
