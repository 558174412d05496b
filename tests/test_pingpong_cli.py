"""``simsrv pingpong``: rows, errors, the figure."""

from __future__ import annotations

import json

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from simsrv.cli.main import main
from simsrv.figures.pingpong import pingpong_figure
from simsrv.interconnect.paper import PAPER_POINTS
from simsrv.interconnect.pingpong import PAPER_SIZES


def test_json_rows_cover_every_profile_and_size_within_10_percent_at_40_kb(capsys):
    assert main(["pingpong", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {tuple(sorted(r)) for r in rows} == {
        ("bandwidth_MB_per_s", "message_bytes", "profile", "time_us")
    }
    assert len(rows) == 3 * len(PAPER_SIZES)
    at_40kb = {r["profile"]: r["bandwidth_MB_per_s"] for r in rows if r["message_bytes"] == 40000}
    for point in PAPER_POINTS:
        if point.message_bytes == 40000:
            assert at_40kb[point.profile] == pytest.approx(point.bandwidth_MB_per_s, rel=0.1)
    for r in rows:  # b = m / t_c
        assert r["bandwidth_MB_per_s"] == pytest.approx(r["message_bytes"] / r["time_us"])


def test_a_table_for_the_named_profiles_only(capsys):
    assert main(["pingpong", "tcp"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[0] == "profile" and len(lines) == 1 + len(PAPER_SIZES)
    assert all(line.startswith("tcp ") for line in lines[1:])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nope"], "profile: unknown interconnect profile 'nope'; allowed: libvip, "
                   "libvip-altered, tcp or a path to a .toml file"),
        (["--out", "fig.txt"], "--out: must end in .png, .svg or .pdf, got 'fig.txt'"),
    ],
)  # fmt: skip
def test_bad_input_is_a_one_line_error_with_exit_2(capsys, argv, message):
    assert main(["pingpong", *argv]) == 2
    err = capsys.readouterr().err
    assert err == f"simsrv: error: {message}\n"


def test_a_profile_file_with_a_bad_field_names_it(tmp_path, capsys):
    bad = tmp_path / "slow.toml"
    bad.write_text(
        'name = "slow"\nsemantics = "maybe"\nsend_cpu_us = 1.0\nrecv_cpu_us = 1.0\n'
        "latency_us = 1.0\nbandwidth_bytes_per_s = 1e6\n"
    )
    assert main(["pingpong", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("simsrv: error: profile[slow.toml].semantics:") and err.count("\n") == 1


def test_out_writes_the_figure(tmp_path, capsys):
    out = tmp_path / "figs" / "pp.png"
    assert main(["pingpong", "libvip", "--out", str(out)]) == 0
    assert out.stat().st_size > 10_000


def test_the_figure_has_a_line_per_profile_and_the_papers_points():
    model = pd.DataFrame(
        [
            {"profile": p, "message_bytes": m, "bandwidth_MB_per_s": m / (100 + m / 40)}
            for p in ("libvip", "tcp")
            for m in (10, 10000, 40000)
        ]
    )
    paper = pd.DataFrame([{"profile": "tcp", "message_bytes": 40000, "bandwidth_MB_per_s": 35}])
    fig = pingpong_figure(model, paper)
    whole = fig.axes[0]
    labels = [t.get_text() for t in whole.get_legend().get_texts()]
    assert labels[:2] == ["libvip (model)", "tcp (model)"] and "tcp ([V] text, ±10 %)" in labels
    plt.close(fig)
