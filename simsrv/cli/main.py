"""Entry point of the ``simsrv`` command."""

from __future__ import annotations

import sys

from simsrv.cli import (
    calibrate_command,
    capacity_command,
    compare_command,
    map_command,
    pingpong_command,
    run_command,
    sweep_command,
    testbed_command,
    validate_command,
)
from simsrv.cli.parser import Parser
from simsrv.core.errors import InputError, InvariantViolation, interrupted
from simsrv.version import __version__

SUBCOMMANDS = (
    run_command,
    compare_command,
    map_command,
    capacity_command,
    sweep_command,
    validate_command,
    calibrate_command,
    pingpong_command,
    testbed_command,
)
"""Modules that each add one subcommand (``add_parser(subparsers)``)."""


def build_parser() -> Parser:
    """The full command-line parser."""
    parser = Parser(
        prog="simsrv",
        description="Discrete-event simulator of multiplayer game-server workloads on "
        "multiprocessors.",
    )
    parser.add_argument("--version", action="version", version=f"simsrv {__version__}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=Parser)
    for module in SUBCOMMANDS:
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; user errors print one line and return 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "handler"):
        parser.print_help()
        return 2
    try:
        return args.handler(args)
    except InputError as error:
        sys.stderr.write(f"simsrv: error: {error}\n")
        return 2
    except InvariantViolation as error:  # a bug in the simulator: say which invariant
        sys.stderr.write(f"simsrv: invariant violated: {error}\n")
        return 3
    except BrokenPipeError:  # output piped into e.g. `head`: not an error
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        sys.stderr.write("simsrv: interrupted\n")
        return 130
    except SystemError as error:  # Ctrl-C while compiled code returned to Python
        if not interrupted(error):
            raise
        sys.stderr.write("simsrv: interrupted\n")
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
