"""Re-run the model on the committed testbed measurements (``docs/testbed-runs.csv``).

The campaign's stored runs are not in the repository, only their summaries; this script
rebuilds each condition from its label (``dm1-n32-77hz-independent-q1000-s1``: map, clients,
rate, phases, quota in us per the campaign's 20 ms period, seed), runs the model with the
timing those runs measured (burst width, send lateness) on a platform, and prints the same
comparison ``simsrv testbed --compare`` writes, so that a model change can be judged against
the measurements behind docs/testbed.md without measuring again::

    python tools/testbed_model_rerun.py --only q --seeds 2 --out /tmp/quota.csv
    python tools/testbed_model_rerun.py --out docs/testbed-validation.csv \
        --figure docs/testbed-vs-model.png

It compares against measurements of another sitting only in this sense: the platform is the
committed one, fitted in the sitting that measured these runs.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simsrv.testbed.build import find_shared  # noqa: E402
from simsrv.testbed.compare import compare_rows, run_model  # noqa: E402

LABEL = re.compile(
    r"(?P<map>[^-]+)-n(?P<clients>\d+)-(?P<rate>[\d.]+)hz-(?P<phases>[^-]+)"
    r"(?:-q(?P<quota>\d+))?-s(?P<seed>\d+)"
)
PERIOD_US = 20_000  # the standard campaign's quota period
DURATION_S, WARMUP_S = 10.0, 2.0  # the standard campaign's


def rows_from_summaries(path: Path, only: str | None) -> list[dict]:
    """The measured rows with the ``config.*`` columns a campaign stores, from their labels."""
    runs = pd.read_csv(path)
    out = []
    for _, r in runs.iterrows():
        if only and only not in r["label"]:
            continue
        match = LABEL.fullmatch(r["label"])
        if match is None:
            raise SystemExit(f"{path}: cannot read the condition of label {r['label']!r}")
        row = r.to_dict()
        quota = match["quota"]
        row.update(
            {
                "config.clients": int(match["clients"]),
                "config.map": match["map"],
                "config.rate_hz": float(match["rate"]),
                "config.phases": match["phases"],
                "config.quota_us": float(quota) if quota else float("nan"),
                "config.period_us": PERIOD_US,
                "config.duration_s": DURATION_S,
                "config.warmup_s": WARMUP_S,
                "config.seed": int(match["seed"]),
                "config.port": 27500,
                "config.server_cpu": 1,
                "config.client_cpu": 0,
            }
        )
        out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=ROOT / "docs" / "testbed-runs.csv")
    parser.add_argument("--only", help="only the labels containing this text")
    parser.add_argument("--platform", default="this-machine-mvdsv")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, help="write the comparison table (CSV)")
    parser.add_argument("--figure", type=Path, help="write the real-vs-model figure (PNG)")
    args = parser.parse_args()
    rows = rows_from_summaries(args.runs, args.only)
    model = run_model(rows, find_shared(None), args.platform, args.seeds, args.workers, print)
    table = compare_rows(pd.DataFrame(rows), model)
    if args.out:
        table.to_csv(args.out, index=False)
    if args.figure:
        from simsrv.figures.testbed import testbed_figure

        runs = pd.DataFrame(rows)[["label", "role", "question"]]
        for key in ("frames_per_s", "messages_per_frame", "replies_per_s", "busy_fraction"):
            runs[f"model.{key}"] = [q.get(key, float("nan")) for q in model]
        runs["model.reply_ratio"] = [q.get("reply_ratio", float("nan")) for q in model]
        testbed_figure(pd.DataFrame(rows), runs).savefig(args.figure, dpi=110)
    pd.set_option("display.width", 200)
    wide = table.pivot_table(
        index="condition", columns="quantity", values="error", aggfunc="first", sort=False
    )
    print(wide.round(3).to_string())
    within = table.groupby("condition", sort=False)["within"].agg(["sum", "count"])
    print(within.to_string())
    print(f"within tolerance: {int(table['within'].sum())} of {len(table)}")


if __name__ == "__main__":
    main()
