"""An argparse parser whose errors are one line and exit with status 2."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from simsrv.errors import InputError
from simsrv.sweep.local import default_workers


class Parser(argparse.ArgumentParser):
    """ArgumentParser that reports a usage error on one line (``simsrv: error: ...``)."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message} (see --help)\n")
        raise SystemExit(2)


def add_scenario_arguments(p: argparse.ArgumentParser) -> None:
    """The scenario file and its ``--set KEY=VALUE`` overrides, shared by every command."""
    p.add_argument(
        "scenario",
        nargs="?",
        default=None,
        help="scenario TOML file (default: the built-in cube-160 scenario)",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scenario field by dotted name, e.g. --set machine.cpus=4 (repeatable)",
    )


def add_workers_argument(p: argparse.ArgumentParser, what: str = "parallel runs") -> None:
    """``--workers N``: how many processes run at once (default: the CPUs available)."""
    p.add_argument(
        "--workers", type=int, default=None, help=f"{what} (default: the CPUs available)"
    )


def resolve_workers(workers: int | None) -> int:
    """The ``--workers`` value, or the CPUs available; raises :class:`InputError` below 1."""
    resolved = workers if workers is not None else default_workers()
    if resolved < 1:
        raise InputError(f"--workers: must be a whole number >= 1, got {resolved}")
    return resolved
