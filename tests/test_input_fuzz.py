"""simsrv's own fuzzer, a small budget in the default run: every generated hostile
input keeps the promise (runs, or one line with exit 2 within 5 s, or stops on Ctrl-C in one
line).  The long campaign is ``python benchmarks/fuzz_campaign.py`` (docs/robustness.md)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from tests.input_fuzz import FAMILIES, Case, Verdict, cases, verdict


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_family_keeps_the_promise(family):
    @settings(
        max_examples=8,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(cases([family]))
    def judge(case: Case) -> None:
        result = verdict(case)
        assert not result.failed, (result, case.describe())

    judge()


def test_the_verdict_tells_failures_from_kept_promises():
    def boom() -> None:
        raise KeyError("x")

    assert verdict(Case("api", call=boom)).outcome == "traceback"
    assert verdict(Case("argv", ["run", "--set", "nope=1"])).outcome == "refused"
    assert verdict(Case("argv", ["compare", "x.toml", "--clients", "a"])).outcome == "refused"
    slow = verdict(Case("api", call=lambda: __import__("time").sleep(5)), budget_s=0.2)
    assert slow == Verdict("interrupted", slow.seconds) and slow.seconds < 1.0


def test_a_case_writes_only_into_its_own_directory(tmp_path, monkeypatch):
    """``map --out 0`` used to write a picture named ``0`` where the fuzzer ran (the campaign
    left five such files in the repository)."""
    monkeypatch.chdir(tmp_path)
    base = b"[run]\nduration_s = 0.1\nwarmup_s = 0.05\n[players]\ncount = 40\n"
    case = Case("argv", ["map", "{dir}/base.toml", "--out", "0.png"], {"base.toml": base})
    assert not verdict(case).failed
    assert list(tmp_path.iterdir()) == []
