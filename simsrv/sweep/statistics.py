"""Mean and 95 % confidence interval over seeds, per grid point.

The interval is Student's: ``mean +- t(0.975, n - 1) * sd / sqrt(n)`` with the sample standard
deviation over the ``n`` seeds of a point (runs with an error are left out).  With one seed the
half-width is NaN: one run says nothing about the spread.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

GROUP_COLUMNS = ("strategy", "cpus", "clients")

TABLE_METRICS = {
    # metric -> (column header, format of mean and half-width)
    "frames_per_s": ("frames/s", "{:.1f}"),
    "messages_per_frame": ("messages/frame", "{:.2f}"),
    "replies_per_s": ("replies/s", "{:.0f}"),
    "parallel_fraction": ("parallel fraction", "{:.3f}"),
    "wall_time_s": ("wall s", "{:.1f}"),
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
    ``mean``, ``ci95`` (half-width), ``n``.

    ``runs``: a ``runs`` table (:mod:`simsrv.sweep.records`); rows with an error are skipped.
    Points keep the order of their first appearance.
    """
    ok = runs[runs["error"].isna()] if "error" in runs else runs
    rows = []
    for key, group in ok.groupby(list(by), sort=False, dropna=False):
        for metric in metrics:
            values = group[metric].dropna()
            rows.append(
                {
                    **dict(zip(by, key, strict=True)),
                    "metric": metric,
                    "mean": float(values.mean()) if len(values) else float("nan"),
                    "ci95": ci95_half_width(values),
                    "n": len(values),
                }
            )
    return pd.DataFrame(rows, columns=[*by, "metric", "mean", "ci95", "n"])


def format_table(summary: pd.DataFrame, by: Sequence[str] = GROUP_COLUMNS) -> str:
    """The printed table: one line per point (its ``by`` values), ``mean +- ci95`` per table
    metric."""
    if summary.empty:
        return "no finished runs\n"
    wide = summary.set_index([*by, "metric"])
    points = [p if isinstance(p, tuple) else (p,) for p in wide.index.droplevel("metric")]
    points = list(dict.fromkeys(points))
    metrics = [m for m in TABLE_METRICS if m in set(summary["metric"])]
    cells = []
    for point in points:
        row = [str(v) for v in point]
        for metric in metrics:
            _, fmt = TABLE_METRICS[metric]
            mean, ci = wide.loc[(*point, metric), ["mean", "ci95"]]
            half = "-" if np.isnan(ci) else fmt.format(ci)
            row.append(f"{fmt.format(mean)} ± {half}")
        cells.append(row)
    header = [*by, *(TABLE_METRICS[m][0] for m in metrics)]
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
    return f"{line(header)}\n{rule}\n{body}\n(mean ± 95 % CI half-width over {n} seeds)\n"
