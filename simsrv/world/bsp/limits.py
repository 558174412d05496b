"""Upper bounds on what a BSP 29 file may claim: a map file is untrusted input.

The reader refuses a file past any of these bounds (one :class:`BspError` line) before it
allocates anything sized by the file's claim, so a hostile or corrupted file costs at most
a bounded amount of memory and time.  Each bound is far above id's maps: the GPL set in
``../shared/maps/quake-gpl/`` is at most 1.6 MiB inflated (start.bsp).
"""

MAX_FILE_BYTES = 64 * 2**20
"""Largest BSP file read, bytes (64 MiB), after gzip decompression: a ``.bsp.gz`` that
inflates past it (a gzip bomb) is refused without inflating the rest."""
