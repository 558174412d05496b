"""Upper bounds on what a BSP 29 file may claim: a map file is untrusted input.

The reader refuses a file past any of these bounds (one :class:`BspError` line) before it
allocates anything sized by the file's claim, so a hostile or corrupted file costs at most
a bounded amount of memory and time.  Each bound is far above id's maps: the GPL set in
``../shared/maps/quake-gpl/`` is at most 1.6 MiB inflated (start.bsp), 1,612 leaves,
2,980 nodes, 8,238 clip nodes, 555 entities in a 41 KB entities lump, 65 tree levels.
"""

MAX_FILE_BYTES = 64 * 2**20
"""Largest BSP file read, bytes (64 MiB), after gzip decompression: a ``.bsp.gz`` that
inflates past it (a gzip bomb) is refused without inflating the rest."""

MAX_LEAVES = 8192
"""Most leaves (id's ``MAX_MAP_LEAFS``): the PVS matrix is leaves x leaves, so this bounds it
to 64 MiB of booleans."""

MAX_NODES = 32768
"""Most hull 0 nodes: a node's 16-bit child index reaches nodes 0..32767 only."""

MAX_CLIPNODES = 32768
"""Most clip nodes, for the same reason."""

MAX_ENTITY_BYTES = 2**20
"""Largest entities lump, bytes (1 MiB, 16 x id's ``MAX_MAP_ENTSTRING``)."""

MAX_ENTITIES = 8192
"""Most entities (8 x id's ``MAX_MAP_ENTITIES``)."""

MAX_TREE_DEPTH = 1024
"""Most levels on any path from a model's head node to a leaf or contents code; a tree walk
thus takes at most this many steps (a loop in the tree would be infinitely deep)."""

MAX_COORD = 32768.0
"""Largest absolute coordinate of a model's box or an entity's origin, units: node and leaf
bounds are 16-bit, so nothing of a BSP 29 world lies farther out."""
