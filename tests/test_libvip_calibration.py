"""``simsrv calibrate libvip2004``: the interconnect profiles fitted to [V §4.1]."""

from __future__ import annotations

import pytest

from simsrv.calibration import CALIBRATORS, FitOptions
from simsrv.calibration.joint import PIN_FLOOR
from simsrv.calibration.libvip2004 import PROFILES, committed_values, write
from simsrv.cli.main import main
from simsrv.interconnect.profile import PROFILE_DIR, load_profile

CALIBRATOR = CALIBRATORS.get("libvip2004", "PLATFORM")


def test_every_parameter_is_pinned_and_every_target_met_at_the_committed_values():
    report = CALIBRATOR.report(FitOptions(), lambda line: None)
    assert report.unpinned == [] and min(report.pin_strength) >= PIN_FLOOR, report.format()
    assert max(abs(report.residuals)) < 0.05  # in tolerances (10 %): within 0.5 %


def test_a_fit_from_half_the_values_finds_the_committed_ones():
    fitted = CALIBRATOR.fit(FitOptions(start=0.5), lambda line: None)
    for key, value in committed_values().items():
        assert fitted[key] == pytest.approx(value, rel=0.01), key


def test_write_replaces_only_the_fitted_lines(tmp_path):
    fitted = {k: 2 * v for k, v in committed_values().items()}
    write(fitted, PROFILE_DIR, tmp_path)
    for name in PROFILES:
        old = (PROFILE_DIR / f"{name}.toml").read_text().splitlines()
        new = (tmp_path / f"{name}.toml").read_text().splitlines()
        changed = [b for a, b in zip(old, new, strict=True) if a != b]
        assert len(changed) == 3 and all("# FITTED" in line for line in changed)
        written = load_profile(str(tmp_path / f"{name}.toml"))
        assert written.send_cpu_us == pytest.approx(2 * load_profile(name).send_cpu_us, rel=1e-3)


def test_the_command_writes_a_directory_and_checks_the_rows(tmp_path, capsys):
    assert main(["calibrate", "libvip2004", "--out", str(tmp_path / "profiles")]) == 0
    out = capsys.readouterr().out
    assert "calibration: 6/6 within tolerance" in out
    assert sorted(p.name for p in (tmp_path / "profiles").iterdir()) == [
        "libvip-altered.toml",
        "libvip.toml",
        "tcp.toml",
    ]


def test_out_must_be_a_directory(tmp_path, capsys):
    afile = tmp_path / "x.toml"
    afile.write_text("")
    assert main(["calibrate", "libvip2004", "--out", str(afile)]) == 2
    assert "--out:" in capsys.readouterr().err
