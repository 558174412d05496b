"""The documentation site builds with ``mkdocs build --strict`` (every page, the generated
reference, the notebooks), skipped where the ``docs`` extra is not installed.

The default suite builds it without executing the notebooks (``SIMSRV_DOCS_EXECUTE=0``,
~10 s); the slow test builds it as ``mkdocs build`` does, executing the five notebooks on their
small sizes (``mkdocs_hooks.py``; ~1 min on 2 cores), and checks their outputs are on the pages.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NEEDED = ("mkdocs", "material", "mkdocs_jupyter")
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
OUTPUT = re.compile(r'<div class="(jp-Rendered\w+)[^"]* jp-OutputArea-output[ "]')  # a cell output


def outputs(page: str) -> list[str]:
    """The kinds of the cell outputs on a rendered notebook page (``jp-RenderedImage``, ...)."""
    return OUTPUT.findall(page)


pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in NEEDED),
    reason="the docs extra is not installed (pip install -e '.[docs]')",
)


def build(site: Path, **env: str) -> dict[str, str]:
    """``mkdocs build --strict`` into ``site`` with ``env`` added; the notebook pages' HTML."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", **env},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    pages = {p.stem for p in (ROOT / "docs").glob("*.md")} - {"index"}
    for page in pages:
        assert (site / page / "index.html").is_file(), page
    reference = (site / "reference" / "index.html").read_text(encoding="utf-8")
    assert "rate_hz" in reference and "reply_max_bytes" in reference  # the generated table
    assert "Tutorial" in (site / "index.html").read_text(encoding="utf-8")
    assert len(NOTEBOOKS) == 5
    html = {
        nb.stem: (site / "notebooks" / nb.stem / "index.html").read_text(encoding="utf-8")
        for nb in NOTEBOOKS
    }
    for name, page in html.items():
        assert "SIMSRV_NOTEBOOK_SMALL" in page, name  # the first code cell, rendered
    return html


def test_the_site_builds_strictly_with_every_page_and_notebook(tmp_path):
    html = build(tmp_path / "site", SIMSRV_DOCS_EXECUTE="0")
    for name, page in html.items():
        assert outputs(page) == [], name  # not executed


@pytest.mark.slow
def test_the_site_shows_the_notebooks_executed_with_their_outputs(tmp_path):
    html = build(tmp_path / "site", MPLBACKEND="Agg")  # the hook restores the inline backend
    for name, page in html.items():
        kinds = outputs(page)
        assert "jp-RenderedImage" in kinds, name  # a figure
        assert {"jp-RenderedText", "jp-RenderedHTMLCommon"} & set(kinds), name  # a table
        assert 'src="data:image/png;base64,' in page, name  # the figure embedded
        # Every code cell was executed, in order: its prompt reads In [1]:, In [2]:, ...
        cells = sum(
            c.cell_type == "code"
            for c in nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4).cells
        )
        counts = [int(n) for n in re.findall(r"In\s*\[(\d+)\]:", page)]
        assert counts == list(range(1, cells + 1)), name
        assert "Traceback" not in page, name
