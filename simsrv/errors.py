"""User-facing errors.

Every problem with user input (a scenario file, a ``--set`` override, a CLI flag, a platform
file) is raised as :class:`InputError`.  Its message is one line that names the offending field
and what is allowed; the command-line interface prints it and exits with status 2, without a
traceback.
"""


class InputError(ValueError):
    """Invalid user input; the message names the field and the allowed values."""
