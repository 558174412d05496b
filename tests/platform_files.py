"""A test's own copy of the testbed platform with some top-level fields set."""

from __future__ import annotations

from pathlib import Path

PLATFORM = Path("simsrv/platforms/this-machine-mvdsv.toml")


def platform_with(
    tmp_path: Path, name: str, fields: dict[str, object], drop: tuple[str, ...] = ()
) -> str:
    """``this-machine-mvdsv`` with the top-level ``fields`` replaced (written as TOML above
    its ``[costs]`` table) and the fields named in ``drop`` removed, as a
    ``machine.platform=...`` override.  ``name`` names the file: platforms are cached by
    path."""
    source = PLATFORM.read_text()
    gone = (*(f"{key} " for key in fields), *(f"{key} " for key in drop))
    kept = [line for line in source.splitlines() if not line.startswith(gone)]

    def value(v: object) -> str:
        return str(v).lower() if isinstance(v, bool) else str(v)

    head = "".join(f"{key} = {value(v)}\n" for key, v in fields.items()) + "\n[costs]"
    path = tmp_path / f"{name}.toml"
    path.write_text("\n".join(kept).replace("[costs]", head, 1))
    return f'machine.platform="{path}"'
