"""Peak resident memory against the run's simulated length.

Each (scenario, duration) is a fresh process (``core_speed``'s child), so its peak RSS is its
own.  Rows go to a CSV (``--csv``, appended to when it exists, so the code before a change can be
measured with ``--label before`` from another checkout on ``PYTHONPATH``), and the figure
(``--png``) plots every label's peak RSS per scenario against the simulated seconds
(warm-up + duration).

    python benchmarks/memory_growth.py --label after \
        --csv docs/performance-memory.csv --png docs/performance-memory.png
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from core_speed import CHILD  # the same fresh-process run (benchmarks/ is on sys.path)
from scale_speed import child

ROOT = Path(__file__).resolve().parents[1]

CASES = {
    "cube-160": (ROOT / "scenarios/cube-160.toml", (1.0, 4.0, 16.0, 64.0)),
    "cube-160-abdelkhalek": (
        ROOT / "scenarios/cube-160.toml",
        (1.0, 4.0, 16.0, 64.0),
        ["server.strategy=abdelkhalek"],
    ),
    "thread-per-client": (
        ROOT / "scenarios/abdelkhalek2004/thread-per-client.toml",
        (1.0, 4.0, 16.0),
    ),
    "clients10000-cpus64": (
        ROOT / "scenarios/scale/clients10000-cpus64.toml",
        (0.5, 1.0, 2.0, 4.0, 8.0),
    ),
    "clients100000-cpus256": (
        ROOT / "scenarios/scale/clients100000-cpus256.toml",
        (0.15, 0.5, 1.0, 2.0),
    ),
    "cluster-nodes4-240": (
        ROOT / "scenarios/cluster/nodes4-cpus2-640.toml",
        (1.0, 4.0, 16.0),
        ["players.count=240"],  # not overloaded: no socket backlog grows by design
        "run",
    ),
}
"""name -> (scenario, measured durations in simulated s[, overrides[, "run"]]): "run" times
``simsrv.run`` (a cluster), else ``simulate``."""

RUN_CHILD = r"""
import json, resource, sys, time
from simsrv import load_scenario, run
scenario = load_scenario(sys.argv[1], sys.argv[2:])
start = time.perf_counter()
result = run(scenario)
print(json.dumps({
    "wall_s": time.perf_counter() - start,
    "simulated_s": scenario.run.warmup_s + scenario.run.duration_s,
    "frames": result.summary["frames"],
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""
"""One fresh process: ``simsrv.run`` of the scenario with overrides; its frames are the
measured ones (every node's)."""

FIELDS = ("label", "case", "duration_s", "simulated_s", "frames", "wall_s", "peak_rss_mb")


def measure(scenario: Path, duration: float, overrides: list[str], code: str = CHILD) -> dict:
    return child(code, scenario, [*overrides, f"run.duration_s={duration}"])


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = list(dict.fromkeys(r["case"] for r in rows))
    labels = list(dict.fromkeys(r["label"] for r in rows))
    colours = {label: f"C{i % 10}" for i, label in enumerate(labels)}  # one per label
    fig, axes = plt.subplots(1, len(cases), figsize=(4.2 * len(cases), 3.6), squeeze=False)
    for ax, case in zip(axes[0], cases, strict=True):
        for label in labels:
            mine = sorted(
                (float(r["simulated_s"]), float(r["peak_rss_mb"]))
                for r in rows
                if r["case"] == case and r["label"] == label
            )
            if mine:
                ax.plot(*zip(*mine, strict=True), marker="o", label=label, color=colours[label])
        ax.set_title(case, fontsize=10)
        ax.set_xlabel("simulated seconds (warm-up + duration)")
        ax.set_ylabel("peak RSS, MB")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Peak resident memory against the run's length", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", default="after", help="series name in the CSV and figure")
    parser.add_argument("--only", default=None, help=f"comma-separated: {', '.join(CASES)}")
    parser.add_argument("--durations", default=None, help="comma-separated, overrides the cases'")
    parser.add_argument("--csv", dest="csv_path", default="docs/performance-memory.csv")
    parser.add_argument("--png", dest="png_path", default="docs/performance-memory.png")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(CASES)
    unknown = sorted(set(names) - set(CASES))
    if unknown:
        parser.error(f"--only: unknown cases {unknown}; allowed: {', '.join(CASES)}")
    csv_path = Path(args.csv_path)
    rows = list(csv.DictReader(csv_path.open())) if csv_path.exists() else []
    for name in names:
        scenario, durations, *rest = CASES[name]
        overrides = rest[0] if rest else []
        code = RUN_CHILD if rest[1:] == ["run"] else CHILD
        if args.durations:
            durations = tuple(float(d) for d in args.durations.split(","))
        for duration in durations:
            got = measure(scenario, duration, overrides, code)
            row = {
                "label": args.label,
                "case": name,
                "duration_s": duration,
                "simulated_s": round(got["simulated_s"], 6),
                "frames": got["frames"],
                "wall_s": round(got["wall_s"], 3),
                "peak_rss_mb": round(got["peak_rss_mb"], 1),
            }
            print(row, flush=True)
            rows = [
                r
                for r in rows
                if (r["label"], r["case"], float(r["duration_s"])) != (args.label, name, duration)
            ]
            rows.append(row)
            with csv_path.open("w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=FIELDS)
                writer.writeheader()
                writer.writerows(rows)
    plot(rows, Path(args.png_path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
