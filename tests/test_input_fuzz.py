"""simsrv's own fuzzer, a small budget in the default run (issue 42): every generated hostile
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
