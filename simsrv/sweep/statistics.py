"""Mean and 95 % confidence interval over seeds, per grid point.

The interval is Student's: ``mean +- t(0.975, n - 1) * sd / sqrt(n)`` with the sample standard
deviation over the ``n`` seeds of a point (runs with an error are left out).  With one seed the
half-width is NaN: one run says nothing about the spread.  With fewer than
:data:`~simsrv.core.defaults.MIN_CI_SEEDS` (3) seeds the printed table marks the interval with ``!``
and a warning (Student's t for 2 seeds is 12.7: the interval says little).

When the runs have replies, offered packets and drops, every summary row also says whether its
point is ``overloaded`` (:mod:`simsrv.sweep.overload`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from simsrv.core.defaults import (
    MIN_CI_SEEDS,
    OVERLOAD_DROPPED,
    OVERLOAD_REPLY_RATIO,
    OVERLOAD_RESPONSE_FRAMES,
)
from simsrv.sweep.overload import NEEDED, RESPONSE, overloaded_column, point_overloaded

GROUP_COLUMNS = ("strategy", "cpus", "clients")

TABLE_METRICS = {
    # metric -> (column header, format of mean and half-width)
    "frames_per_s": ("frames/s", "{:.1f}"),
    "messages_per_frame": ("messages/frame", "{:.2f}"),
    "replies_per_s": ("replies/s", "{:.0f}"),
    "parallel_fraction": ("parallel fraction", "{:.3f}"),
    "response_p95_ms": ("p95 response ms", "{:.1f}"),
    "run_time_s": ("wall s", "{:.1f}"),
}
"""Metrics of the printed comparison table (``summary.csv`` has every numeric metric)."""


def ci95_half_width(values: Sequence[float]) -> float:
    """Half-width of the 95 % Student interval of the mean of ``values`` (NaN if n < 2)."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n < 2:
        return float("nan")
    return float(stats.t.ppf(0.975, n - 1) * x.std(ddof=1) / np.sqrt(n))


def mean_ci(
    runs: pd.DataFrame, metrics: Sequence[str], by: Sequence[str] = GROUP_COLUMNS
) -> pd.DataFrame:
    """One row per point (the ``by`` columns: strategy, cpus, clients by default) and metric:
    ``mean``, ``ci95`` (half-width), ``n``, and ``overloaded`` (bool, the point's flag of
    :mod:`simsrv.sweep.overload`) when ``runs`` has the columns it needs.

    ``runs``: a ``runs`` table (:mod:`simsrv.sweep.records`); rows with an error are skipped.
    Points keep the order of their first appearance.
    """
    ok = runs[runs["error"].isna()] if "error" in runs else runs
    flag = overloaded_column(ok)
    rows = []
    for key, group in ok.groupby(list(by), sort=False, dropna=False):
        extra = {}
        if flag:
            judged = [m for m in (*NEEDED, *RESPONSE) if m in group]
            extra["overloaded"] = point_overloaded({m: group[m].mean() for m in judged})
        for metric in metrics:
            values = group[metric].dropna()
            rows.append(
                {
                    **dict(zip(by, key, strict=True)),
                    "metric": metric,
                    "mean": float(values.mean()) if len(values) else float("nan"),
                    "ci95": ci95_half_width(values),
                    "n": len(values),
                    **extra,
                }
            )
    columns = [*by, "metric", "mean", "ci95", "n", *(["overloaded"] if flag else [])]
    return pd.DataFrame(rows, columns=columns)


def format_table(summary: pd.DataFrame, by: Sequence[str] = GROUP_COLUMNS) -> str:
    """The printed table: one line per point (its ``by`` values), ``mean +- ci95`` per table
    metric, and an ``overloaded`` column when the summary has the flag.  An interval over fewer
    than :data:`~simsrv.core.defaults.MIN_CI_SEEDS` seeds is marked ``!`` and explained below."""
    if summary.empty:
        return "no finished runs\n"
    wide = summary.set_index([*by, "metric"])
    points = [p if isinstance(p, tuple) else (p,) for p in wide.index.droplevel("metric")]
    points = list(dict.fromkeys(points))
    metrics = [m for m in TABLE_METRICS if m in set(summary["metric"])]
    flagged = "overloaded" in summary and bool(metrics)
    cells = []
    for point in points:
        row = [str(v) for v in point]
        for metric in metrics:
            _, fmt = TABLE_METRICS[metric]
            mean, ci, n = wide.loc[(*point, metric), ["mean", "ci95", "n"]]
            half = "-" if np.isnan(ci) else fmt.format(ci)
            mark = " !" if n < MIN_CI_SEEDS else ""
            row.append(f"{fmt.format(mean)} ± {half}{mark}")
        if flagged:
            row.append("yes" if wide.loc[(*point, metrics[0]), "overloaded"] else "no")
        cells.append(row)
    header = [*by, *(TABLE_METRICS[m][0] for m in metrics), *(["overloaded"] if flagged else [])]
    widths = [max(len(r[i]) for r in [header, *cells]) for i in range(len(header))]

    def line(values: list[str]) -> str:
        first = values[0].ljust(widths[0])
        rest = (v.rjust(w) for v, w in zip(values[1:], widths[1:], strict=True))
        return "  ".join([first, *rest]).rstrip()

    shown = summary[summary["metric"].isin(metrics)]["n"]
    low, high = int(shown.min()), int(shown.max())
    n = str(high) if low == high else f"{low}-{high}"
    rule = "-" * len(line(header))
    body = "\n".join(line(r) for r in cells)
    notes = [f"(mean ± 95 % CI half-width over {n} seeds)"]
    if low < 2:
        notes.append(
            f"! warning: one seed gives no confidence interval; run {MIN_CI_SEEDS} or more"
        )
    elif low < MIN_CI_SEEDS:
        notes.append(
            f"! warning: fewer than {MIN_CI_SEEDS} seeds: the confidence interval is unreliable "
            f"(Student's t = {stats.t.ppf(0.975, low - 1):.1f} for {low} seeds); "
            f"run {MIN_CI_SEEDS} or more seeds"
        )
    if flagged:
        notes.append(
            f"overloaded: replies below {OVERLOAD_REPLY_RATIO:.0%} of the offered packets/s, "
            f"more than {OVERLOAD_DROPPED:.0%} dropped, or the p95 response time above "
            f"{OVERLOAD_RESPONSE_FRAMES:g} client frame: the server does not keep up there"
        )
    return f"{line(header)}\n{rule}\n{body}\n" + "\n".join(notes) + "\n"
