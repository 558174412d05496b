"""Writing a fitted platform file: atomically, keeping its hand-written header."""

from __future__ import annotations

import json
import os
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from simsrv.platforms.profile import Costs

COST_FIELDS = frozenset(Costs.model_fields)
"""The ``[costs]`` keys (the rest of a platform's numbers are top-level)."""


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename, so an interrupted
    write never leaves half a platform file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def with_values(source: Path, values: dict[str, str]) -> str:
    """``source``'s text with each ``key = ...`` line whose key is in ``values`` set to
    ``key = values[key]`` (already written as TOML), keeping the line's trailing comment."""
    lines = source.read_text().splitlines()
    for i, line in enumerate(lines):
        key = line.split("=")[0].strip()
        if key in values and "=" in line:
            comment = line[line.index("#") :] if "#" in line else ""
            lines[i] = f"{key} = {values[key]}" + (f"  {comment}" if comment else "")
    return "\n".join(lines) + "\n"


def replace_costs_table(source: Path, out: Path, lines: list[str]) -> None:
    """Write ``source`` to ``out`` with everything from its ``[costs]`` line on replaced by
    ``lines`` (the first being the new ``[costs]`` heading); the hand-written header above it
    is kept.  ``out`` may be ``source``."""
    text = source.read_text()
    head = text[: text.index("[costs]")]
    write_atomic(out, head + "\n".join(lines) + "\n")


class PlatformFiles:
    """Temporary platform files for trial values: ``platform`` with the given ``[costs]`` and
    top-level numbers replaced; called with the values, returns the path as a JSON string (for
    ``--set machine.platform=...``); the files are removed on close."""

    def __init__(self, platform: Path) -> None:
        self.data = tomllib.loads(platform.read_text())
        self.tmpdir = tempfile.TemporaryDirectory(prefix="simsrv-fit-")
        self.count = 0

    def __call__(self, values: dict[str, float]) -> str:
        self.count += 1
        path = Path(self.tmpdir.name) / f"platform-{self.count}.toml"
        costs = {k: v for k, v in values.items() if k in COST_FIELDS}
        top = {k: v for k, v in values.items() if k not in costs}
        path.write_text(dump_toml({**self.data, **top, "costs": costs}))
        return json.dumps(str(path))

    def close(self) -> None:
        self.tmpdir.cleanup()

    def __enter__(self) -> PlatformFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def dump_toml(data: dict[str, Any]) -> str:
    """A platform dictionary as TOML (scalars, then one level of tables)."""

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return repr(v).lower()
        return json.dumps(v) if isinstance(v, str) else repr(v)

    top = [f"{k} = {value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    tables = [
        f"\n[{k}]\n" + "\n".join(f"{kk} = {value(vv)}" for kk, vv in v.items())
        for k, v in data.items()
        if isinstance(v, dict)
    ]
    return "\n".join(top) + "\n" + "\n".join(tables) + "\n"


def measured_on(machine: dict, runs: list[str]) -> str:
    """Where a testbed platform was measured: the ``machine`` a run's summary records
    (``simsrv.testbed.run.machine_description``) and the calibration runs' labels."""
    return (
        f"{machine['cpu_model']}, {machine['cpus']} CPUs, Linux {machine['kernel']}, "
        f"clocksource {machine['clocksource']}; calibration runs: {', '.join(runs)}"
    )


def write_measured(fitted: dict[str, Any], source: Path, out: Path, server: str) -> None:
    """Write ``source`` to ``out`` with the ``fitted`` values (numbers to 6 significant
    digits, lists of them), named after ``out``'s file and described as ``server`` on the
    machine ``fitted["_machine"]`` (:func:`measured_on`) when there is one."""
    values = {key: _toml_number(value) for key, value in fitted.items() if key != "_machine"}
    values["name"] = f'"{out.stem}"'
    if fitted.get("_machine"):
        values["description"] = f'"{server}: {fitted["_machine"]}"'
    write_atomic(out, with_values(source, values))


def _toml_number(value: float | list[float]) -> str:
    """A fitted value as TOML: a number to 6 significant digits, or an array of them."""
    if isinstance(value, list):
        return "[" + ", ".join(f"{v:.6g}" for v in value) + "]"
    return f"{value:.6g}"
