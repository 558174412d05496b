"""``simsrv calibrate``: the root finder, the command, and the stability of the fits.

The committed platforms against their targets are checked by ``tests/test_validation.py``
(the quick table); here the fits themselves are re-run.  The UltraSPARC fit takes seconds and
runs in the default suite from a different starting point; the Cordeiro fit (a few minutes)
is the ``slow`` study.
"""

from __future__ import annotations

import tomllib

import pytest

from simsrv.calibration.fitting import NoBracket, boundary_clients, solve_log
from simsrv.cli.main import main
from simsrv.platforms.profile import PLATFORM_DIR, load_platform
from tests.cli_refusals import assert_refused_in_one_line


@pytest.mark.parametrize("x0", [0.3, 5.0, 25.0, 400.0])
@pytest.mark.parametrize("rising", [False, True])
def test_solve_log_finds_the_root_from_any_start(x0, rising):
    calls = []

    def f(x: float) -> float:  # 100 / x falls, x / 4 rises; both equal 4 at x = 16 or 25
        calls.append(x)
        return x / 4 if rising else 100 / x

    root = solve_log(f, 4.0, x0, rising=rising, lo=0.1, hi=1000.0)
    assert root == pytest.approx(16.0 if rising else 25.0, rel=0.005)
    assert len(calls) == len(set(calls))  # no point evaluated twice
    assert len(calls) <= 20


def test_solve_log_says_which_bound_cannot_reach_the_target():
    with pytest.raises(NoBracket, match="not reached at lo = 5") as caught:
        solve_log(lambda x: 1000 / x, 500.0, 50.0, rising=False, lo=5.0, hi=100.0)
    assert caught.value.bound == pytest.approx(5.0)
    with pytest.raises(NoBracket, match="not reached at hi = 100"):
        solve_log(lambda x: 1000 / x, 1.0, 50.0, rising=False, lo=5.0, hi=100.0)


def test_boundary_count_is_half_a_step_above_the_last_count_below_the_value():
    assert boundary_clients(90.0, 8) == 92
    assert boundary_clients(24.0, 8) == 28


def test_ultrasparc_fit_from_twice_the_committed_factors_is_stable(tmp_path, capsys):
    out = tmp_path / "area.toml"
    status = main(["calibrate", "area2004-ultrasparc", "--start", "2", "--out", str(out)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert "calibration: 3/3 within tolerance" in printed
    fitted = tomllib.loads(out.read_text())
    load_platform(str(out))  # a valid platform file
    committed = tomllib.loads((PLATFORM_DIR / "area2004-ultrasparc.toml").read_text())
    assert fitted["costs"].keys() == committed["costs"].keys()
    # s2 is exact (linear); s1 and s3 meet noisy targets, so they agree within a few %
    costs = committed["costs"]
    assert all(fitted["costs"][k] == 0.0 for k in costs if costs[k] == 0.0)  # off stays off
    got = {k: fitted["costs"][k] / costs[k] for k in costs if costs[k]}
    assert got["request_per_message"] == pytest.approx(1.0, rel=0.01)
    assert got["world_per_entity"] == pytest.approx(1.0, rel=0.05)
    assert got["reply_per_client"] == pytest.approx(1.0, rel=0.05)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nope"], "PLATFORM: unknown calibrated platform 'nope'; allowed: abdelkhalek2004"),
        (["area2004-ultrasparc", "--start", "0"], "--start: must be a number > 0, got 0"),
        (["area2004-ultrasparc", "--seeds", "0"], "--seeds: must be a whole number >= 1"),
        (
            ["area2004-ultrasparc", "--out", "/dev/null/x.toml"],
            "--out: /dev/null exists and is not a",
        ),
    ],
)
def test_bad_calibrate_input_is_a_one_line_error(capsys, argv, message):
    assert_refused_in_one_line(capsys, ["calibrate", *argv], message)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("platform", "start"),
    [("cordeiro2007-xeon", 2.0), ("cordeiro2007-xeon", 0.5), ("abdelkhalek2004-xeon-ht", 0.5)],
)
def test_fits_from_other_starting_points_reproduce_the_targets(tmp_path, platform, start):
    out = tmp_path / "platform.toml"
    assert main(["calibrate", platform, "--start", str(start), "--out", str(out)]) == 0
