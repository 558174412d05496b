"""The documentation site builds with ``mkdocs build --strict`` (every page, the generated
reference, the notebooks), skipped where the ``docs`` extra is not installed."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NEEDED = ("mkdocs", "material", "mkdocs_jupyter")

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in NEEDED),
    reason="the docs extra is not installed (pip install -e '.[docs]')",
)


def test_the_site_builds_strictly_with_every_page_and_notebook(tmp_path):
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    pages = {p.stem for p in (ROOT / "docs").glob("*.md")} - {"index"}
    for page in pages:
        assert (site / page / "index.html").is_file(), page
    reference = (site / "reference" / "index.html").read_text(encoding="utf-8")
    assert "rate_hz" in reference and "reply_max_bytes" in reference  # the generated table
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert len(notebooks) == 5
    for notebook in notebooks:
        html = (site / "notebooks" / notebook.stem / "index.html").read_text(encoding="utf-8")
        assert "SIMSRV_NOTEBOOK_SMALL" in html, notebook.name  # the first code cell, rendered
    assert "Tutorial" in (site / "index.html").read_text(encoding="utf-8")
