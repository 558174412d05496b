"""For tests that send Ctrl-C to a child process."""

from __future__ import annotations

import signal


def default_sigint() -> None:
    """In the child, before it runs the command: SIGINT back to its default action.

    A shell starts its background jobs (``cmd &``, ``nohup``) with SIGINT ignored, an ignored
    signal stays ignored across ``exec``, and Python then installs no ``KeyboardInterrupt``
    handler: a child started from such a test run would not see the Ctrl-C the test sends.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)
