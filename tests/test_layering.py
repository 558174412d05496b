"""The package's layers are a contract (``[tool.importlinter]`` in pyproject).

``lint-imports`` checks it; an import against the layering (a lower floor importing a higher
one) fails here with the import named.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).parent / "lint-imports"

pytestmark = pytest.mark.skipif(
    not LINT.exists(), reason="import-linter is not installed (pip install -e '.[test]')"
)


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the ``simsrv`` package under ``root`` (its own pyproject.toml)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT), "--no-cache"], cwd=root, env=env, capture_output=True, text=True
    )


def test_the_package_keeps_its_layers():
    done = lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_an_import_against_the_layers_fails(tmp_path):
    shutil.copytree(
        ROOT / "simsrv", tmp_path / "simsrv", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "simsrv" / "core" / "upward.py").write_text("import simsrv.cli.main\n")
    done = lint(tmp_path)
    assert done.returncode != 0
    assert "simsrv.core.upward -> simsrv.cli.main" in done.stdout, done.stdout
