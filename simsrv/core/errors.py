"""User-facing errors.

Every problem with user input (a scenario file, a ``--set`` override, a CLI flag, a platform
file) is raised as :class:`InputError`.  Its message is one line that names the offending field
and what is allowed; the command-line interface prints it and exits with status 2, without a
traceback.  A broken invariant of a run (a bug in the simulator, :class:`InvariantViolation`)
exits with status 3.
"""

from collections.abc import Callable
from typing import Any

MAX_MESSAGE_CHARS = 1000
"""Longest message an :class:`InputError` keeps; a longer one (a 20 MB value echoed back)
keeps its head, where the field is named, and its tail."""

MAX_VALUE_CHARS = 80
"""Longest echo of a user's value inside a message (see :func:`shown`)."""

_ESCAPES = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x00": "\\x00"})


def one_line(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` as one printable line of at most ``limit`` characters (plus the note of the
    cut): line breaks and control characters escaped, a long middle cut out."""
    text = text.translate(_ESCAPES)
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    if len(text) <= limit:
        return text
    head, tail = limit * 3 // 4, limit // 4
    return f"{text[:head]} ...[{len(text) - head - tail:,} characters cut]... {text[-tail:]}"


def shown(value: Any, limit: int = MAX_VALUE_CHARS, render: Callable[[Any], str] = repr) -> str:
    """``render(value)`` (default ``repr``) for a message, cut to about ``limit`` characters
    (a huge value is not rendered whole first)."""
    size = len(str(value))
    text = render(value) if size <= 100 * limit else render(str(value)[: 2 * limit])
    if len(text) <= limit:
        return text
    return f"{text[: limit - 10]}... ({size:,} characters)"


class InputError(ValueError):
    """Invalid user input; the message names the field and the allowed values.

    The message is made one printable line of at most :data:`MAX_MESSAGE_CHARS` characters
    (:func:`one_line`), whatever the input it quotes."""

    def __init__(self, message: object = "") -> None:
        super().__init__(one_line(str(message)))


class InvariantViolation(RuntimeError):
    """A run broke an invariant (a bug in the simulator, not bad input)."""

    def __init__(self, invariant: str, frame: int | None, detail: str) -> None:
        self.invariant, self.frame, self.detail = invariant, frame, detail
        self.trace: Any = None  # the run's trace DataFrame, when the run got that far
        where = "at the end of the run" if frame is None else f"frame {frame}"
        super().__init__(f"{invariant}: {where}: {detail}")


def interrupted(error: BaseException) -> bool:
    """Whether ``error`` is a Ctrl-C: a :class:`KeyboardInterrupt`, or an error raised because
    one arrived while compiled code was returning to Python (numba's dispatcher then reports
    ``SystemError: ... returned a result with an exception set``, the interrupt as its cause
    or context)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False
