"""Generated documentation stays current."""

from __future__ import annotations

from pathlib import Path

from simsrv.pipeline.reference import render

ROOT = Path(__file__).resolve().parents[1]


def test_scenario_reference_is_current():
    committed = (ROOT / "docs" / "reference.md").read_text()
    hint = "regenerate: python -m simsrv.pipeline.reference > docs/reference.md"
    assert committed == render(), hint
