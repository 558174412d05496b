"""Every scenario file of ``scenarios/``, as pytest parameters: scenarios that read id's GPL
maps (``../shared/maps/quake-gpl/``, never committed here) are skipped where those are absent."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GPL_MAPS = ROOT.parent / "shared" / "maps" / "quake-gpl"
SCENARIOS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "scenarios").rglob("*.toml"))
HEAVY = {
    "scenarios/scale/clients100000-cpus256.toml",
    "scenarios/scale/clients10000-cpus64.toml",
    "scenarios/cluster/nodes64-cpus16-100000.toml",
    "scenarios/cluster/nodes64-cpus64-1000000.toml",
}
"""The scenarios at scale: too long for the default suite (their tests are marked slow)."""


def needs_gpl_maps(path: str) -> bool:
    """Whether the scenario reads a map file from the GPL maps folder."""
    return "shared/maps/" in (ROOT / path).read_text()


def scenario_params(paths: list[str]) -> list:
    """``paths`` as parameters, each skipped when it needs the GPL maps and they are absent."""
    skip = pytest.mark.skipif(not GPL_MAPS.is_dir(), reason=f"needs id's GPL maps in {GPL_MAPS}")
    return [pytest.param(p, marks=skip) if needs_gpl_maps(p) else p for p in paths]
