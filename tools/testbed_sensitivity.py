"""The testbed model's sensitivity to the machine mechanisms the platform measures.

For a few stored conditions of a campaign (their first repeat's measured send times replayed,
as ``simsrv testbed --compare`` does), runs the model on ``this-machine-mvdsv`` with one group
of parameters scaled by 0.5, 1 and 1.5 and writes the server's CPU busy fraction, frames/s and
messages/frame per run::

    python tools/testbed_sensitivity.py results/testbed3 --out docs/testbed-sensitivity.csv

The groups: the cold start of a frame after idleness (``cold_start_us`` and
``cold_refill_us`` together) and the receiver's wake-up charged to the send calls
(``net_send_wake``).
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simsrv.calibration.platform_file import PlatformFiles  # noqa: E402
from simsrv.testbed.build import find_shared  # noqa: E402
from simsrv.testbed.compare import execute_all  # noqa: E402
from simsrv.testbed.model import SCENARIO, row_overrides  # noqa: E402
from simsrv.validation.jobs import RunJob  # noqa: E402

PLATFORM = ROOT / "simsrv" / "platforms" / "this-machine-mvdsv.toml"
GROUPS = {
    "cold start": ("cold_start_us", "cold_refill_us"),
    "send wake-up": ("net_send_wake",),
}
FACTORS = (0.5, 1.0, 1.5)
CONDITIONS = (
    "dm1-n4-77hz-independent-s1",
    "dm1-n16-77hz-independent-s1",
    "dm1-n128-77hz-independent-s1",
    "dm1-n16-77hz-step-s1",
    "dm1-n32-77hz-independent-q2000-s1",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("campaign", type=Path, help="a campaign directory (runs.parquet, runs/)")
    parser.add_argument("--out", type=Path, required=True, help="the table to write (CSV)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    table = pd.read_parquet(args.campaign / "runs.parquet")
    rows = [r.to_dict() for _, r in table[table["label"].isin(CONDITIONS)].iterrows()]
    if not rows:
        raise SystemExit(f"{args.campaign}: none of the conditions {CONDITIONS}")
    shared = find_shared(None)
    data = tomllib.loads(PLATFORM.read_text())
    jobs, keys = [], []
    with PlatformFiles(PLATFORM) as files:
        for group, names in GROUPS.items():
            for factor in FACTORS:
                values = dict(data["costs"])
                for name in names:
                    if name in values:
                        values[name] *= factor
                    else:
                        values[name] = data[name] * factor
                platform = files(values)  # a quoted path, for --set
                for row in rows:
                    overrides = row_overrides(
                        row, shared, seed=1, platform=platform, store=args.campaign
                    )
                    jobs.append(RunJob(str(SCENARIO), tuple(overrides)))
                    keys.append((row["label"], group, factor))
        results = execute_all(jobs, args.workers)
    out = pd.DataFrame(
        [
            {
                "condition": label,
                "parameters": group,
                "factor": factor,
                "busy_fraction": r["busy_fraction"],
                "frames_per_s": r["frames_per_s"],
                "messages_per_frame": r["messages_per_frame"],
            }
            for (label, group, factor), r in zip(keys, results, strict=True)
        ]
    )
    out.to_csv(args.out, index=False, float_format="%.6g")
    print(out.to_string(index=False))


if __name__ == "__main__":
    main()
