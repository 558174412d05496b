"""docs/howto.md is true: its example strategy, taken from the page, is one file that
registers itself and runs on the default scenario (in its compiled frame loop, and planned in
Python alike, charging the shared cost rules); the places "Add a mechanism to the machine"
names exist."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from test_compiled_loop import _assert_same, _runs

import simsrv.strategies
from simsrv.machine import engine
from simsrv.pipeline.load import load_scenario
from simsrv.strategies import STRATEGIES, import_all

ROOT = Path(__file__).resolve().parents[1]
HOWTO = (ROOT / "docs/howto.md").read_text()


def _section(title: str) -> str:
    start = HOWTO.index(f"## {title}")
    end = HOWTO.find("\n## ", start + 1)
    return HOWTO[start : end if end > 0 else None]


@pytest.fixture
def teams(tmp_path, monkeypatch):
    """The page's example saved as the one file it says, in a folder of the strategies
    package, and the package's modules imported (registered in a copy of the registry)."""
    code = re.search(r"```python\n(.*?)```", _section("Add a strategy"), re.S).group(1)
    (tmp_path / "teams.py").write_text(code)
    monkeypatch.setattr(simsrv.strategies, "__path__", [*simsrv.strategies.__path__, str(tmp_path)])
    monkeypatch.setattr(STRATEGIES, "_items", dict(STRATEGIES._items))
    import_all()
    yield sys.modules["simsrv.strategies.teams"]
    sys.modules.pop("simsrv.strategies.teams", None)


def test_the_howto_strategy_is_one_file_that_runs_compiled_and_in_python(teams, monkeypatch):
    assert "teams" in STRATEGIES.names()
    assert STRATEGIES.get("teams", "server.strategy").create is teams.Teams
    sets = ["server.strategy=teams", "server.options.teams=3"]
    fast, slow, loop = _runs(sets, monkeypatch)  # its compiled loop, and its Python plan
    _assert_same(fast, slow)
    assert loop.frames > len(fast.frames) / 2  # planned by the compiled planner
    assert all(fast.checks.values())
    trace = fast.trace
    assert set(trace["thread"]) == {"team0", "team1", "team2"}
    # the costs are the shared rules': receiving is net_recv_per_message per packet read
    per_message = scenario_cost(load_scenario(None, sets), "net_recv_per_message")
    recv = trace[trace["activity"] == "net_recv"]
    total_us = (recv["end_s"] - recv["start_s"]).sum() * 1e6
    assert total_us == pytest.approx(per_message * fast.frames["messages"].sum(), rel=1e-9)


def scenario_cost(scenario, name: str) -> float:
    from simsrv.platforms.profile import resolve_platform

    platform = resolve_platform(scenario.machine.platform, scenario.machine.costs)
    return getattr(platform.costs, name)


def test_the_howto_strategy_page_counts_one_file():
    text = _section("Add a strategy")
    assert "**one file** in `simsrv/strategies/`" in text
    assert "Save it as `simsrv/strategies/teams.py`" in text


def test_the_places_a_machine_mechanism_goes_exist():
    text = _section("Add a mechanism to the machine")
    paths = set(re.findall(r"`(simsrv/[\w/]+\.py|tests/[\w/]+\.py)`", text))
    assert {"simsrv/machine/simpy_engine.py", "simsrv/machine/engine.py"} <= paths
    for path in paths:
        assert (ROOT / path).exists(), path
    for name in re.findall(r"`(_\w+|new_arrays|execute)`", text):
        assert callable(getattr(engine, name)), name
    assert "MachineState" in text and hasattr(engine, "MachineState")
