"""An argparse parser whose errors are one line and exit with status 2."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn


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
