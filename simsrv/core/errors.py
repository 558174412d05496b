"""User-facing errors.

Every problem with user input (a scenario file, a ``--set`` override, a CLI flag, a platform
file) is raised as :class:`InputError`.  Its message is one line that names the offending field
and what is allowed; the command-line interface prints it and exits with status 2, without a
traceback.  A broken invariant of a run (a bug in the simulator, :class:`InvariantViolation`)
exits with status 3.
"""

from typing import Any


class InputError(ValueError):
    """Invalid user input; the message names the field and the allowed values."""


class InvariantViolation(RuntimeError):
    """A run broke an invariant (a bug in the simulator, not bad input)."""

    def __init__(self, invariant: str, frame: int | None, detail: str) -> None:
        self.invariant, self.frame, self.detail = invariant, frame, detail
        self.trace: Any = None  # the run's trace DataFrame, when the run got that far
        where = "at the end of the run" if frame is None else f"frame {frame}"
        super().__init__(f"{invariant}: {where}: {detail}")
