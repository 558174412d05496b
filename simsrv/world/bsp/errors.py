"""The error a BSP file that cannot be read raises."""

from simsrv.core.errors import InputError


class BspError(InputError):
    """A file that is not a readable BSP 29 map; the message names the file and the problem."""
