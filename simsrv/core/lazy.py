"""Package attributes imported on first use (PEP 562 ``__getattr__``).

A package's ``__init__`` that re-exports names from its heavy modules (numpy, pandas, scipy,
matplotlib) makes every ``import simsrv.<package>.<light module>`` pay for them, because Python
runs the package's ``__init__`` first.  With :func:`lazy_exports` the names are imported when
first used, so the command line's parser (``simsrv --help``) starts without them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` whose attribute ``name`` is
    ``exports[name]``'s attribute of the same name (a module path), imported on first access
    and then stored in ``namespace`` (the package's ``globals()``)."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
