"""``report.html``: one self-contained page to share a comparison or a sweep.

The page holds the printed table (with its seed warning and ``overloaded`` column), every
figure of the output directory embedded as a base64 PNG (no file beside it is needed), the
scenario the runs started from, and their provenance (simsrv version, command line, date,
Python, machine, scenario hashes).  Nothing is fetched from the network: no scripts, no
external style sheets.
"""

from __future__ import annotations

import base64
import html
import platform
import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em;
       color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 2em; border-bottom: 1px solid #ddd; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #555; }
table.provenance td { padding: 0.15em 1em 0.15em 0; vertical-align: top; font-size: 0.9em; }
"""


def provenance(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Where a result came from: simsrv version, command line, UTC date, Python, machine, plus
    ``extra`` entries."""
    from simsrv.version import __version__

    return {
        "simsrv": __version__,
        "command": " ".join(["simsrv", *sys.argv[1:]]) if sys.argv else "simsrv",
        "date (UTC)": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S"),
        "python": platform.python_version(),
        "machine": f"{platform.system()} {platform.machine()}",
        **(extra or {}),
    }


def html_report(
    title: str,
    table: str,
    figures: Iterable[Path],
    scenario: str,
    facts: Mapping[str, str],
) -> str:
    """The page: ``table`` (preformatted text), ``figures`` (PNG files, embedded in order),
    ``scenario`` (text) and ``facts`` (provenance, name -> value)."""
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{e(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{e(title)}</h1>",
        "<h2>Table</h2>",
        f"<pre>{e(table)}</pre>",
    ]
    figures = list(figures)
    if figures:
        parts.append("<h2>Figures</h2>")
    for path in figures:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        parts.append(
            f'<figure><img alt="{e(path.stem)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{e(path.name)}</figcaption></figure>"
        )
    parts += ["<h2>Scenario</h2>", f"<pre>{e(scenario)}</pre>", "<h2>Provenance</h2>"]
    rows = "".join(f"<tr><td>{e(k)}</td><td>{e(str(v))}</td></tr>" for k, v in facts.items())
    parts += [f'<table class="provenance">{rows}</table>', "</body></html>", ""]
    return "\n".join(parts)


def write_report(path: Path, *args, **kwargs) -> Path:
    """Write :func:`html_report` to ``path`` (UTF-8); return ``path``."""
    path.write_text(html_report(*args, **kwargs), encoding="utf-8")
    return path
