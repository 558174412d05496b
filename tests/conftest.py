"""Shared test helpers."""

from __future__ import annotations

import pytest

from simsrv.pipeline.load import load_scenario

SHORT = ["run.duration_s=0.5", "run.warmup_s=0.2"]


@pytest.fixture
def short_scenario():
    """Factory: the default scenario, shortened, with extra ``--set`` style overrides."""

    def make(*overrides: str):
        return load_scenario(None, [*SHORT, *overrides])

    return make
