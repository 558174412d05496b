"""``simsrv validate``: the reference table, its pass rules, its quantities and the command.

The quick run of the whole table (3 seeds x 3 s, about a minute on 2 cores) is the CI check
that every calibration target holds; the full table (5 seeds) is ``simsrv validate``.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from simsrv.calibration import CALIBRATORS, cordeiro2007
from simsrv.cli.main import main
from simsrv.core.errors import InputError
from simsrv.interconnect import load_profile
from simsrv.pipeline.load import load_scenario
from simsrv.validation import load_reference
from simsrv.validation.pingpong import NEEDS_VERSUS, PINGPONG_QUANTITIES
from simsrv.validation.quantities import QUANTITIES, measure_all
from simsrv.validation.reference import CAPACITY_QUANTITIES, ReferenceRow
from simsrv.validation.report import BEGIN, END, update_doc
from simsrv.validation.validate import RowResult, _collect
from tests.cli_refusals import assert_refused_in_one_line

ROOT = Path(__file__).resolve().parents[1]
JSON_KEYS = {
    "id",
    "paper",
    "quantity",
    "paper_value",
    "model_value",
    "ci95",
    "rel_error",
    "kind",
    "passed",
}


def _row(**fields) -> ReferenceRow:
    base = {
        "id": "x",
        "paper": "p",
        "source": "s",
        "description": "d",
        "kind": "prediction",
        "scenario": "cube-160.toml",
        "quantity": "frames_per_s",
        "value": 10.0,
        "rel_tol": 0.1,
    }
    return ReferenceRow(**{**base, **fields})


def test_every_row_names_a_scenario_a_quantity_and_a_calibrated_platform():
    reference = load_reference()
    for row in reference.row:
        if row.pingpong:  # measured on the interconnect model, not on a scenario
            assert row.quantity in PINGPONG_QUANTITIES, row.id
            load_profile(row.pingpong)
            assert not row.versus or load_profile(row.versus)
            assert (row.quantity in NEEDS_VERSUS) == bool(row.versus), row.id
            continue
        assert row.scenario_path().is_file(), row.id
        assert row.baseline is None or row.scenario_path(row.baseline).is_file(), row.id
        assert row.quantity in CAPACITY_QUANTITIES or row.quantity in QUANTITIES.names(), row.id
        load_scenario(str(row.scenario_path()), list(row.set))  # the overrides are valid
    for name, paper in reference.papers.items():
        assert paper.platform in CALIBRATORS.names(), name
        assert reference.platform_rows(paper.platform), f"{name} has no calibration target"
    # the joint fit aims at the published time shares too, never at the all-busy predictions
    fitted = {(Path(t.scenario).name, t.quantity) for t in cordeiro2007.targets()}
    shares = {"request_reply_share", "world_share", "network_share", "worker_teardown_share"}
    assert shares <= {q for _, q in fitted}
    assert ("clone-nowait.toml", "all_cpus_busy") not in fitted
    assert all(reference.by_id(t.id).kind == "calibration" for t in cordeiro2007.targets())


def test_a_bad_reference_row_is_a_one_line_error_naming_the_field(tmp_path):
    text = (ROOT / "simsrv" / "validation" / "reference.toml").read_text()
    bad = tmp_path / "reference.toml"
    bad.write_text(text.replace("rel_tol = 0.03", "rel_tol = 0.03\nabs_tol = 1.0", 1))
    with pytest.raises(InputError, match=r"^reference\.row\.0\.rel_tol: give exactly one"):
        load_reference.__wrapped__(bad)
    bad.write_text(text.replace('kind = "calibration"', 'kind = "fitted"', 1))
    with pytest.raises(InputError, match=r"^reference\.row\.0\.kind: .*'calibration'"):
        load_reference.__wrapped__(bad)


@pytest.mark.parametrize(
    ("fields", "model", "passed"),
    [
        ({"rel_tol": 0.1}, 10.99, True),
        ({"rel_tol": 0.1}, 11.01, False),
        ({"rel_tol": 0.1}, 8.99, False),
        ({"abs_tol": 2.0, "rel_tol": None}, 12.0, True),
        ({"relation": "at_most", "abs_tol": 0.0, "rel_tol": None}, 10.0, True),
        ({"relation": "at_most", "abs_tol": 0.0, "rel_tol": None}, 10.01, False),
        ({"relation": "at_most", "abs_tol": 0.0, "rel_tol": None}, 0.0, True),
        ({"relation": "at_least", "rel_tol": 0.1}, 9.0, True),
        ({"relation": "at_least", "rel_tol": 0.1}, 8.9, False),
    ],
)
def test_pass_rules(fields, model, passed):
    assert _row(**fields).passes(model) is passed


def test_row_statistics_mean_ci_and_sd():
    result = RowResult(_row(), values=[9.0, 10.0, 11.0])
    assert result.model_value == pytest.approx(10.0)
    assert result.ci95 == pytest.approx(4.303 * 1.0 / math.sqrt(3), rel=1e-3)  # t(0.975, 2)
    assert result.rel_error == pytest.approx(0.0)
    spread = RowResult(_row(statistic="sd", value=2.0), values=[9.0, 10.0, 11.0])
    assert spread.model_value == pytest.approx(1.0) and spread.ci95 is None
    assert spread.rel_error == pytest.approx(-0.5) and not spread.passed
    failed = RowResult(_row(kind="calibration"), values=[], error="boom")
    assert failed.model_value is None and not failed.passed


def test_an_interrupted_table_marks_the_rows_that_did_not_run():
    first, second = _row(id="a"), _row(id="b")
    plan = [(first, [[0], [1]]), (second, [[2]])]
    outcomes = {0: {"frames_per_s": 9.0}, 1: {"frames_per_s": 11.0}}
    done, missing = _collect(plan, outcomes, "not run (interrupted)")
    assert done.values == [9.0, 11.0] and done.error is None
    assert missing.error == "not run (interrupted)" and missing.model_value is None


def test_quantities_of_a_known_summary():
    scenario = load_scenario(str(ROOT / "scenarios" / "cordeiro2007" / "clone-wait.toml"), [])
    summary = {
        "frames_per_s": 200.0,
        "messages_per_frame": 18.0,
        "messages_per_s": 3600.0,
        "replies_per_s": 3200.0,
        "lock_wait_fraction": 0.0,
        "barrier_wait_fraction": 0.0,
        "any_waiting_fraction": 0.25,
        "moments": {"overlap": 0.1, "parallel": 0.3},
        # shares of 2 CPUs x the window: busy = 0.6, join_wait and idle are not busy
        "time_breakdown": {
            "world": 0.03,
            "request": 0.2,
            "reply": 0.1,
            "net_recv": 0.03,
            "net_send": 0.03,
            "teardown": 0.21,
            "join_wait": 0.1,
            "idle": 0.4,
        },
        "os_time_fraction": {"teardown": 0.21},
        # shares of the window per thread: the worker's busy time is 0.9 + 0.3 (its exit)
        "per_thread": {
            "coordinator": {"stage1": 0.5, "join_wait": 0.5},
            "worker1": {"stage2": 0.9, "idle": 0.1},
            "worker1.exit": {"os": 0.42, "idle": 0.58},
        },
        "stage_time_fraction": {"stage2": 0.36},
        "groups": {"mean_count": 10.0, "mean_size": 7.0},
    }
    got = measure_all(summary, scenario)
    assert got["replies_per_frame"] == pytest.approx(16.0)
    assert got["reply_ratio"] == pytest.approx(3200.0 / (160 * scenario.clients.rate_hz))
    assert got["all_cpus_busy"] == pytest.approx(0.4)
    assert got["request_reply_share"] == pytest.approx(0.36 / 0.6)
    assert got["world_share"] == pytest.approx(0.05)
    assert got["network_share"] == pytest.approx(0.1)
    assert got["no_thread_waiting_fraction"] == pytest.approx(0.75)
    assert got["worker_teardown_share"] == pytest.approx(0.42 / (0.9 + 0.42))
    assert got["stage2_us_per_packet"] == pytest.approx(100.0)
    assert got["groups_per_frame"] == 10.0 and got["group_size"] == 7.0
    assert got["stage1_share"] == 0.0  # no stage 1 in this summary
    del summary["groups"]
    assert "groups_per_frame" not in measure_all(summary, scenario)


@pytest.fixture(scope="module")
def quick_table(tmp_path_factory):
    """``simsrv validate --quick --json`` over the whole table (about a minute)."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["validate", "--quick", "--json"])
    return status, json.loads(out.getvalue())


def _within_sampling_error(row: dict) -> bool:
    """The paper's value lies within the tolerance plus the model's 95 % CI of the row."""
    return abs(row["model_value"] - row["paper_value"]) <= row["tolerance"] + row["ci95"]


def test_quick_validation_passes_every_calibration_target(quick_table):
    # At the quick size (3 seeds of 3 s) a parallel Cordeiro run's mean carries a few % of
    # sampling error (seed-to-seed sd of clone-nowait frames/s ~5 %): a calibration row may miss
    # its tolerance there by at most its CI.  The tolerance itself is held at the size of
    # record by test_cordeiro_parallel_rows_pass_at_the_validation_size.
    status, rows = quick_table
    conflicts = {r.id for r in load_reference().row if r.conflict}
    failed = [
        r
        for r in rows
        if r["kind"] == "calibration" and not r["passed"] and r["id"] not in conflicts
    ]
    assert all(_within_sampling_error(r) for r in failed), failed
    assert status == (1 if failed else 0)
    assert len(rows) == len(load_reference().row)
    for row in rows:
        assert set(row) >= JSON_KEYS
        assert row["error"] is None and row["model_value"] is not None, row
        assert row["kind"] in ("calibration", "prediction")
    predictions = [r for r in rows if r["kind"] == "prediction"]
    assert len(predictions) >= 20 and all(r["rel_error"] is not None for r in predictions)


def test_the_recorded_misses_and_predictions_hold(quick_table):
    # the misses docs/validation.md explains; a change that fixes one should update the page
    _, rows = quick_table
    by_id = {r["id"]: r for r in rows}
    assert by_id["cordeiro-fork-wait-groups"]["model_value"] > 12  # ~15 vs 9
    # predicted, never fitted: within 5 points since the coordinator builds the action lists
    # (docs/calibration.md); they were 0.71 / 0.70 without that mechanism
    for row in ("cordeiro-clone-nowait-all-busy", "cordeiro-clone-nowait-cube-all-busy"):
        assert by_id[row]["passed"], by_id[row]
    assert by_id["ab04-capacity-gain"]["model_value"] > 1.0  # +155 % vs +25 %
    assert by_id["cordeiro-cube-groups"]["passed"]


def test_only_selects_papers_and_rows(capsys):
    assert main(["validate", "--list", "--only", "area2004,ab04-capacity-gain"]) == 0
    ids = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert "ab04-capacity-gain" in ids and all(i.startswith(("area-", "ab04-cap")) for i in ids)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--only", "nope"], "--only: unknown paper or row 'nope'; allowed papers: cordeiro2007"),
        (["--seeds", "0"], "--seeds: must be a whole number >= 1, got 0"),
        (["--workers", "0"], "--workers: must be a whole number >= 1, got 0"),
        (["--doc", "missing.md"], "--doc: file not found: missing.md"),
    ],
)
def test_bad_flags_are_one_line_errors(capsys, argv, message):
    assert_refused_in_one_line(capsys, ["validate", *argv], message)


def test_update_doc_replaces_the_marked_tables_and_keeps_the_prose(tmp_path):
    reference = load_reference()
    page = tmp_path / "validation.md"
    begin = BEGIN.format(paper="area2004")
    page.write_text(f"# Title\n\nprose before\n\n{begin}\nold table\n{END}\n\nprose after\n")
    row = reference.by_id("area-sequential-capacity")
    assert update_doc(page, [RowResult(row, values=[24.0, 24.0])], reference) == ["area2004"]
    text = page.read_text()
    assert "old table" not in text and "prose before" in text and "prose after" in text
    assert "| `area-sequential-capacity` |" in text and "| pass |" in text
    other = reference.by_id("cordeiro-sequential-fps")
    with pytest.raises(InputError, match="no '<!-- validation-table: cordeiro2007 -->'"):
        update_doc(page, [RowResult(other, values=[2050.0])], reference)


def test_the_validation_page_has_every_row():
    text = (ROOT / "docs" / "validation.md").read_text()
    for paper in load_reference().papers:
        assert BEGIN.format(paper=paper) in text, paper
    for row in load_reference().row:
        assert f"`{row.id}`" in text, f"{row.id}: regenerate with simsrv validate --doc"


def test_ctrl_c_prints_the_rows_that_finished_and_exits_130():
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "simsrv",
            "validate",
            "--only",
            "cordeiro2007",
            "--workers",
            "1",
            "--seeds",
            "2",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL) and None,
    )
    deadline = time.monotonic() + 60
    finished = 0
    while finished < 2 and time.monotonic() < deadline:  # wait for two runs to finish
        line = proc.stderr.readline()
        finished += line.rstrip().endswith(" ok")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "not run (interrupted)" in out
    # both its seeds ran: it has a verdict (pass, or conf: a recorded conflict), not "not run"
    assert re.search(r" (pass|conf)  calibration  cordeiro-sequential-bwcontrol-fps", out), out
    assert err.rstrip().endswith("simsrv: interrupted")


def test_a_recorded_conflict_is_reported_but_not_a_calibration_failure():
    from simsrv.validation import calibration_failures
    from simsrv.validation.report import verdict

    plain = _row(kind="calibration", value=10.0, rel_tol=0.1)
    conflict = _row(id="c", kind="calibration", value=10.0, rel_tol=0.1, conflict="why")
    results = [RowResult(plain, [20.0]), RowResult(conflict, [20.0]), RowResult(conflict, [])]
    assert [verdict(r) for r in results] == ["FAIL", "conf", "FAIL"]  # no value: still a failure
    assert calibration_failures(results) == [results[0], results[2]]
    with pytest.raises(ValueError, match="conflict: only calibration rows"):
        _row(kind="prediction", conflict="why")


PARALLEL_CORDEIRO_ROWS = ",".join(
    f"cordeiro-{run}-{q}"
    for run in ("fork-wait", "clone-wait", "clone-nowait")
    for q in ("fps", "mpf", "mps")
)


def test_cordeiro_parallel_rows_pass_at_the_validation_size(capsys):
    """The fitted parallel runs within tolerance at docs/validation.md's size (5 seeds x 10 s)."""
    status = main(["validate", "--only", PARALLEL_CORDEIRO_ROWS, "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 9 and all(r["seeds"] == 5 for r in rows)
    assert all(r["passed"] for r in rows), [r for r in rows if not r["passed"]]
    assert status == 0
