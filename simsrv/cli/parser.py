"""An argparse parser whose errors are one line and exit with status 2."""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from simsrv.core.errors import InputError
from simsrv.core.paths import exists, is_dir


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
        "--workers",
        type=whole_number(1, MAX_WORKERS),
        default=None,
        help=f"{what} (default: the CPUs available)",
    )


def resolve_workers(workers: int | None) -> int:
    """The ``--workers`` value (1 to :data:`MAX_WORKERS`, checked by the parser), or the CPUs
    available."""
    from simsrv.sweep.local import default_workers

    return workers if workers is not None else default_workers()


MAX_WORKERS = 1024
"""Most processes a command starts at once."""


def whole_number(low: int, high: int) -> Callable[[str], int]:
    """argparse type of a count flag: a whole number from ``low`` to ``high`` (a huge value
    would build its grid or pool for ever)."""

    def parse(text: str) -> int:
        got = text if len(text) <= 40 else f"{text[:30]}... ({len(text)} characters)"
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {got!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be a whole number >= {low}, got {got}")
        if value > high:
            raise argparse.ArgumentTypeError(f"must be a whole number <= {high:,}, got {got}")
        return value

    return parse


def finite_float(text: str) -> float:
    """argparse type of every numeric flag: a finite number (NaN and infinity are refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def prepare_output_dir(path: Path, flag: str) -> None:
    """Create the output directory ``path`` (given by ``flag``) before anything is computed,
    so that an unusable path is a one-line input error and not a loss of finished work.

    Writing is tested by creating (and removing) a file in it: permissions alone do not tell,
    e.g. for a read-only file system or ``/proc``.
    """
    if exists(path) and not is_dir(path):
        raise InputError(f"{flag}: {path} exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"{flag}: cannot create directory {path}: {error.strerror}") from None
    if not os.access(path, os.W_OK):
        raise InputError(f"{flag}: cannot write in {path}: permission denied")
    try:
        with tempfile.NamedTemporaryFile(dir=path, prefix=".simsrv-write-test-"):
            pass
    except OSError as error:
        raise InputError(f"{flag}: cannot write in {path}: {error.strerror}") from None


def prepare_output_file(path: Path, flag: str) -> None:
    """Check that the output file ``path`` can be written before anything is computed: its
    directory is created, and the file itself is opened for appending (created, then removed
    again if it did not exist; an existing file is left as it was)."""
    if is_dir(path):
        raise InputError(f"{flag}: {path} is a directory, not a file")
    prepare_output_dir(path.parent, flag)
    existed = exists(path)
    try:
        with open(path, "ab"):
            pass
    except OSError as error:
        raise InputError(f"{flag}: cannot write {path}: {error.strerror}") from None
    if not existed:
        path.unlink(missing_ok=True)
