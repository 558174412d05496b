"""A command refused in one line: what the tests of every subcommand's bad flags check."""

from __future__ import annotations

from simsrv.cli.main import main


def assert_refused_in_one_line(capsys, argv: list[str], message: str) -> None:
    """``simsrv ARGV`` exits 2 with one line on stderr: ``message`` after simsrv's prefix
    (``simsrv: error: ``) or after argparse's (``simsrv COMMAND: error: argument ``, a count
    out of range refused by the parser)."""
    try:
        status = main(argv)
    except SystemExit as refused:  # a count out of range is refused by the parser
        status = refused.code
    assert status == 2
    err = capsys.readouterr().err
    one_line = err.count("\n") == 1
    assert (
        err.startswith(f"simsrv: error: {message}")
        and one_line
        or (err.startswith(f"simsrv {argv[0]}: error: argument {message}") and one_line)
    ), err
