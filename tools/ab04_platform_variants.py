"""The runs behind docs/abdelkhalek.md's tables of the platform under AB04's threads: each
variant of the platform file (signals, the interrupt CPU, its softirq share and placement, HT's
throughput, the device's transmit lock), re-calibrated on the sequential server when it
changes it, then AB04's rows as ``simsrv validate --quick --only abdelkhalek2004`` measures
them (112 clients: lock, barrier, any-waiting and optimised lock waits; the capacity gain).  Usage:
``python tools/ab04_platform_variants.py [VARIANT ...]`` (all by default); prints one line per
variant, then all of them as JSON (~1 min per variant on 2 cores, twice that with a re-fit).

The re-fit runs ``simsrv calibrate`` on a copy of the variant written over the committed
platform file, which is restored afterwards (also on an error or an interrupt)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from simsrv.platforms.profile import PLATFORM_DIR
from simsrv.validation.reference import load_reference
from simsrv.validation.validate import validate

PLATFORM = "abdelkhalek2004-xeon-ht"
ROWS = {
    "lock": "ab04-lock-wait-112",
    "barrier": "ab04-barrier-wait-112",
    "any": "ab04-any-waiting-112",
    "optimised lock": "ab04-optimized-lock-wait-112",
    "gain": "ab04-capacity-gain",
    "sequential capacity": "ab04-sequential-capacity",
}
# name -> (field replacements in the platform file, whether the sequential server changes)
VARIANTS = {
    "now": ({}, False),
    "no signals": ({"signal_send": "0.0", "signal_wakeup": "0.0"}, False),
    "no interrupt CPU": ({"irq_cpu": None}, True),
    "no device lock": ({"xmit_lock_share": "0.0"}, False),
    "neither (signals, interrupt CPU)": (
        {"irq_cpu": None, "signal_send": "0.0", "signal_wakeup": "0.0"},
        True,
    ),
    "none of the three": (
        {"irq_cpu": None, "signal_send": "0.0", "signal_wakeup": "0.0", "xmit_lock_share": "0.0"},
        True,
    ),
    "signals low (0.7 / 2.5 us)": ({"signal_send": "0.7", "signal_wakeup": "2.5"}, False),
    "signals high (2.5 / 12 us)": ({"signal_send": "2.5", "signal_wakeup": "12.0"}, False),
    "softirq_share 0.46": ({"softirq_share": "0.46"}, True),
    "softirq_share 0.75": ({"softirq_share": "0.75"}, True),
    "irq_cpu 0": ({"irq_cpu": "0"}, True),
    "smt_throughput 0.45": ({"smt_throughput": "0.45"}, False),
    "smt_throughput 0.65": ({"smt_throughput": "0.65"}, False),
    "netdev_max_backlog 100": ({"netdev_max_backlog": "100"}, False),
    "xmit_lock_share 0.15": ({"xmit_lock_share": "0.15"}, False),
    "xmit_lock_share 0.30": ({"xmit_lock_share": "0.30"}, False),
}


def variant_text(text: str, changes: dict[str, str | None]) -> str:
    """The platform file's text with each ``field = value`` line replaced (None: removed;
    a field the file lacks is added before its ``[costs]`` table)."""
    for field, value in changes.items():
        line = re.compile(rf"^{field} = .*$", re.MULTILINE)
        new = "" if value is None else f"{field} = {value}"
        if line.search(text):
            text = line.sub(new, text)
        elif value is not None:
            text = text.replace("[costs]", f"{new}\n\n[costs]", 1)
    return text


def fitted(variant: Path, work: Path) -> Path:
    """``variant`` re-calibrated (written over the committed file for the fit, restored)."""
    committed = PLATFORM_DIR / f"{PLATFORM}.toml"
    backup = work / "committed.toml"
    shutil.copy(committed, backup)
    out = work / f"{variant.stem}-fit.toml"
    try:
        shutil.copy(variant, committed)
        subprocess.run(
            [sys.executable, "-m", "simsrv", "calibrate", PLATFORM, "--out", str(out)],
            check=True,
            capture_output=True,
        )
    finally:
        shutil.copy(backup, committed)
    return out


def measure(name: str, work: Path) -> dict[str, float]:
    changes, refit = VARIANTS[name]
    text = (PLATFORM_DIR / f"{PLATFORM}.toml").read_text()
    path = work / (re.sub(r"\W+", "-", name).strip("-") + ".toml")
    path.write_text(variant_text(text, changes))
    if refit:  # (the fit writes the hand-set costs back: the variant's are applied again)
        path = fitted(path, work)
        path.write_text(variant_text(path.read_text(), changes))
    reference = load_reference()
    rows = [row for row in reference.select(["abdelkhalek2004"]) if row.id in ROWS.values()]
    results = validate(rows, quick=True, seeds=3, workers=2, platform_files={PLATFORM: str(path)})
    by_id = {r.row.id: r for r in results}
    return {
        key: (by_id[row].model_value, by_id[row].ci95) if row in by_id else None
        for key, row in ROWS.items()
    }


def main() -> None:
    names = sys.argv[1:] or list(VARIANTS)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            out[name] = measure(name, Path(tmp))
            print(name, out[name], flush=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
