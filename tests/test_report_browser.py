"""``report.html`` opens in a real headless browser without errors (slow; needs Chromium).

Runs a tiny ``simsrv compare``, loads its ``report.html`` from disk in headless Chromium
(``tests/headless_chromium.py``, the DevTools protocol over a pipe) and checks: no console
error, no uncaught exception, no failed load; every ``<img>`` decoded (natural size > 0); the
printed table, the scenario and the provenance are on the page.  The full-page screenshot is
kept next to the report (and copied to ``$SIMSRV_REPORT_SCREENSHOT`` when that is set) so a
person can look at it.

Run with ``python -m pytest -m slow tests/test_report_browser.py`` after
``apt-get install chromium``; skipped where ``/usr/bin/chromium`` is absent.
"""

from __future__ import annotations

import base64
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tests.headless_chromium import CHROMIUM, visit

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="no /usr/bin/chromium (apt-get install chromium)"
    ),
]


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("compare") / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "simsrv.cli.main",
            "compare",
            str(ROOT / "scenarios" / "cube-160.toml"),
            "--duration-s",
            "0.3",
            "--seeds",
            "1",
            "--cpus",
            "2",
            "--strategies",
            "sequential,bsp-group",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return out / "report.html"


@pytest.fixture(scope="module")
def page(report):
    seen = visit(report.as_uri(), width=1400, height=2000)
    shot = report.with_name("report-screenshot.png")
    shot.write_bytes(seen.screenshot)
    if os.environ.get("SIMSRV_REPORT_SCREENSHOT"):
        Path(os.environ["SIMSRV_REPORT_SCREENSHOT"]).write_bytes(seen.screenshot)
    return seen


def test_the_report_loads_without_console_errors_or_failed_loads(page):
    assert page.errors == []


def test_every_figure_is_embedded_and_decodes(page, report):
    html = report.read_text(encoding="utf-8")
    embedded = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    pngs = sorted((report.parent / "figures").glob("*.png"))
    assert len(pngs) >= 4 and len(page.facts["images"]) == len(pngs) == len(embedded)
    for image, data in zip(page.facts["images"], embedded, strict=True):
        width, height = struct.unpack(">II", base64.b64decode(data)[16:24])  # PNG IHDR
        assert image["complete"] and (image["width"], image["height"]) == (width, height), image


def test_the_table_scenario_and_provenance_are_on_the_page(page):
    assert page.facts["headings"] == [
        "simsrv compare",
        "Table",
        "Figures",
        "Scenario",
        "Provenance",
    ]
    table, scenario = page.facts["pre"][0], page.facts["pre"][1]
    rows = [line.split() for line in table.splitlines()]
    assert rows[0][:3] == ["strategy", "cpus", "clients"]
    assert {row[0] for row in rows[2:4]} == {"sequential", "bsp-group"}
    assert '"platform": "cordeiro2007-xeon"' in scenario


def test_the_screenshot_is_a_full_page_png(page):
    assert page.screenshot[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", page.screenshot[16:24])
    assert width > 1000  # the window width, less a scroll bar at most
    assert height >= page.facts["height"] > 2000  # the whole page, past the first window
