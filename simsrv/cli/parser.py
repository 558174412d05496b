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
