"""The validation table as text (the terminal), JSON and Markdown (``docs/validation.md``).

``docs/validation.md`` keeps its prose by hand; each paper's table sits between
``<!-- validation-table: PAPER -->`` and ``<!-- /validation-table -->`` and is replaced by
:func:`update_doc` (``simsrv validate --doc docs/validation.md``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from simsrv.core.errors import InputError
from simsrv.validation.reference import Reference
from simsrv.validation.validate import RowResult

BEGIN = "<!-- validation-table: {paper} -->"
END = "<!-- /validation-table -->"


def number(value: float | None) -> str:
    """Four significant digits, or a dash for a missing value."""
    return "-" if value is None else f"{value:.4g}"


def model_cell(result: RowResult, plus_minus: str = "±") -> str:
    """``mean ± ci95`` (or the value alone), or why there is none."""
    if result.model_value is None:
        return result.error or "-"
    text = number(result.model_value)
    return f"{text} {plus_minus} {result.ci95:.2g}" if result.ci95 is not None else text


def error_cell(result: RowResult) -> str:
    """The relative error in percent, signed."""
    return "-" if result.rel_error is None else f"{100 * result.rel_error:+.1f} %"


def verdict(result: RowResult) -> str:
    """``pass``, ``FAIL`` (a calibration target missed), ``conf`` (a calibration target
    missed whose conflict with the others is recorded) or ``miss`` (a prediction)."""
    if result.passed:
        return "pass"
    if result.row.kind == "prediction":
        return "miss"
    return "conf" if result.conflicted else "FAIL"


def format_text(results: Sequence[RowResult], reference: Reference) -> str:
    """Rows grouped by paper, one line each; a count of passes per kind at the end."""
    lines = []
    for paper, title in ((name, p.title) for name, p in reference.papers.items()):
        rows = [r for r in results if r.row.paper == paper]
        if not rows:
            continue
        lines += ["", f"{paper}: {title}"]
        lines.append(
            f"  {'':4}  {'kind':11}  {'id':40} {'paper':>9}  {'model ± 95% CI':>20}  "
            f"{'error':>9}  {'tolerance':>11}"
        )
        for r in rows:
            lines.append(
                f"  {verdict(r):4}  {r.row.kind:11}  {r.row.id:40} {number(r.row.value):>9}  "
                f"{model_cell(r):>20}  {error_cell(r):>9}  {r.row.tolerance_label:>11}"
            )
    lines.append("")
    for kind in ("calibration", "prediction"):
        of_kind = [r for r in results if r.row.kind == kind]
        if of_kind:
            passed = sum(r.passed for r in of_kind)
            conflicts = sum(verdict(r) == "conf" for r in of_kind)
            recorded = f" ({conflicts} recorded conflicts: conf)" if conflicts else ""
            lines.append(f"{kind}: {passed}/{len(of_kind)} within tolerance{recorded}")
    return "\n".join(lines)


def format_markdown(results: Sequence[RowResult]) -> str:
    """One paper's rows as a Markdown table."""
    lines = [
        "| row | quantity | source | kind | paper | model (95 % CI) | error | tolerance | |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| `{r.row.id}` | {r.row.description} | [{r.row.source}] | {r.row.kind} | "
            f"{number(r.row.value)} | {model_cell(r)} | {error_cell(r)} | "
            f"{r.row.tolerance_label} | {verdict(r)} |"
        )
    return "\n".join(lines)


def update_doc(path: Path, results: Sequence[RowResult], reference: Reference) -> list[str]:
    """Replace each paper's marked table in ``path`` with ``results``; returns the papers
    updated.  Papers without results (``--only``) keep their table."""
    text = path.read_text()
    updated = []
    for paper in reference.papers:
        rows = [r for r in results if r.row.paper == paper]
        if not rows:
            continue
        begin = BEGIN.format(paper=paper)
        pattern = re.compile(re.escape(begin) + r".*?" + re.escape(END), re.S)
        if not pattern.search(text):
            raise InputError(f"--doc: {path} has no '{begin}' ... '{END}' block")
        block = f"{begin}\n{format_markdown(rows)}\n{END}"
        text = pattern.sub(lambda _, block=block: block, text)
        updated.append(paper)
    path.write_text(text)
    return updated
