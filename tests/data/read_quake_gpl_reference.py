"""Print reference values of the GPL Quake maps as TOML, read without the project's reader.

Usage::

    python tests/data/read_quake_gpl_reference.py /work/shared/maps/quake-gpl \
        > tests/data/quake_gpl_maps.toml

For every ``*.bsp.gz`` in the folder (a gzip-compressed Quake 1 BSP version 29 file), the values
are read with the standard library only, independently of ``simsrv`` and of numpy:

* the header (version, 15 lump offsets and lengths) and model 0 (``mins``, ``maxs``,
  ``visleafs``) with plain ``struct.unpack_from`` at the documented byte offsets;
* counts of records as lump length / record size (leaves 28, models 64), and the sum of
  ``visleafs`` over all models;
* entity counts with regular expressions over the raw entity text (up to its NUL):
  blocks ``{ ... }`` and ``"classname" "NAME"`` pairs;
* the extent of the whole vertexes lump (every 12-byte record), and the extent of the vertices
  of model 0's faces only (faces -> surfedges -> edges -> vertexes), and the differences
  ``world_mins - vertex_mins`` / ``world_maxs - vertex_maxs``.

The files are only read; nothing is written but standard output.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import struct
import sys
from pathlib import Path

LUMPS = (
    "entities",
    "planes",
    "miptex",
    "vertexes",
    "visibility",
    "nodes",
    "texinfo",
    "faces",
    "lighting",
    "clipnodes",
    "leaves",
    "marksurfaces",
    "edges",
    "surfedges",
    "models",
)
COUNTED_CLASSES = (
    "info_player_deathmatch",
    "info_player_start",
    "trigger_teleport",
    "info_teleport_destination",
)


def read_map(path: Path) -> dict:
    """The reference values of one ``.bsp.gz`` file."""
    raw = gzip.decompress(path.read_bytes())
    (version,) = struct.unpack_from("<i", raw, 0)
    lump = {name: struct.unpack_from("<ii", raw, 4 + 8 * i) for i, name in enumerate(LUMPS)}
    for name, (offset, length) in lump.items():
        if offset < 0 or length < 0 or offset + length > len(raw):
            raise ValueError(f"{path.name}: lump {name} lies outside the file")

    def count(name: str, size: int) -> int:
        length = lump[name][1]
        if length % size:
            raise ValueError(f"{path.name}: lump {name} length {length} not a multiple of {size}")
        return length // size

    models_ofs = lump["models"][0]
    n_models = count("models", 64)
    world_mins = struct.unpack_from("<3f", raw, models_ofs)
    world_maxs = struct.unpack_from("<3f", raw, models_ofs + 12)
    # model_t: mins[3] maxs[3] origin[3] (36 bytes), headnode[4] (16), visleafs at byte 52
    visleafs = [struct.unpack_from("<i", raw, models_ofs + 64 * m + 52)[0] for m in range(n_models)]
    world_firstface, world_numfaces = struct.unpack_from("<2i", raw, models_ofs + 56)

    v_ofs = lump["vertexes"][0]
    vertexes = [
        struct.unpack_from("<3f", raw, v_ofs + 12 * i) for i in range(count("vertexes", 12))
    ]
    vertex_mins = [min(v[k] for v in vertexes) for k in range(3)]
    vertex_maxs = [max(v[k] for v in vertexes) for k in range(3)]

    used = set()
    for f in range(world_firstface, world_firstface + world_numfaces):
        # face: int16 planenum, int16 side, int32 firstedge, int16 numedges, ...
        firstedge, numedges = struct.unpack_from("<ih", raw, lump["faces"][0] + 20 * f + 4)
        for s in range(firstedge, firstedge + numedges):
            (surfedge,) = struct.unpack_from("<i", raw, lump["surfedges"][0] + 4 * s)
            v0, v1 = struct.unpack_from("<2H", raw, lump["edges"][0] + 4 * abs(surfedge))
            used.add(v0 if surfedge >= 0 else v1)
    face_mins = [min(vertexes[i][k] for i in used) for k in range(3)]
    face_maxs = [max(vertexes[i][k] for i in used) for k in range(3)]

    e_ofs, e_len = lump["entities"]
    text = raw[e_ofs : e_ofs + e_len].split(b"\0", 1)[0].decode("latin-1")
    classnames = re.findall(r'"classname"\s+"([^"]*)"', text)
    return {
        "file": path.name,
        "sha256": hashlib.sha256(raw).hexdigest(),
        "size": len(raw),
        "version": version,
        "world_mins": list(world_mins),
        "world_maxs": list(world_maxs),
        "models": n_models,
        "leaves": count("leaves", 28),
        "visleafs": visleafs[0],
        "all_models_visleafs": sum(visleafs),
        "vertex_mins": vertex_mins,
        "vertex_maxs": vertex_maxs,
        "world_mins_minus_vertex_mins": [
            a - b for a, b in zip(world_mins, vertex_mins, strict=True)
        ],
        "world_maxs_minus_vertex_maxs": [
            a - b for a, b in zip(world_maxs, vertex_maxs, strict=True)
        ],
        "world_face_vertex_mins": face_mins,
        "world_face_vertex_maxs": face_maxs,
        "entities": len(re.findall(r"\{[^{}]*\}", text)),
        **{name: classnames.count(name) for name in COUNTED_CLASSES},
    }


def _toml_value(v) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


HEADER = """\
# Reference values of the GPL Quake maps (../shared/maps/quake-gpl/*.bsp.gz), for the BSP reader's
# tests.  Made by tests/data/read_quake_gpl_reference.py with the Python standard library only
# (gzip, struct.unpack_from at the documented offsets, re), independently of simsrv and numpy:
#   world_mins/world_maxs, visleafs: model 0 of the models lump (float32 x 6; int32 at byte 52);
#   models, leaves: lump length / 64 and / 28; all_models_visleafs: sum of visleafs of all models;
#   entities: count of "{...}" blocks in the entity text (up to its NUL); info_player_deathmatch,
#   info_player_start, trigger_teleport, info_teleport_destination: count of the regex
#   "classname"\\s+"NAME" in that text;
#   vertex_mins/maxs: extent of every vertex of the vertexes lump; world_face_vertex_mins/maxs:
#   extent of the vertices of model 0's faces only (faces -> surfedges -> edges -> vertexes);
#   *_minus_*: world box minus vertex extent, per axis;
#   sha256, size: of the decompressed file.
# Regenerate: python tests/data/read_quake_gpl_reference.py /work/shared/maps/quake-gpl \\
#   > tests/data/quake_gpl_maps.toml
"""


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    paths = sorted(Path(argv[1]).glob("*.bsp.gz"))
    if not paths:
        print(f"no *.bsp.gz in {argv[1]}", file=sys.stderr)
        return 1
    out = [HEADER]
    for path in paths:
        out.append(f"\n[{path.name.removesuffix('.bsp.gz')}]\n")
        out.extend(f"{k} = {_toml_value(v)}\n" for k, v in read_map(path).items())
    sys.stdout.write("".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
