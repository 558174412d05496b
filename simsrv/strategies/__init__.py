"""Server strategies.  Importing this package registers every strategy: each module of the
package is imported (a new strategy is one file here that registers itself)."""

import importlib
import pkgutil

from simsrv.strategies.base import (
    STRATEGIES,
    CompiledPlanner,
    Strategy,
    StrategyContext,
    StrategyKind,
)


def import_all(package: str = __name__, path: list[str] | None = None) -> None:
    """Import every module of the strategies package (in name order): each registers what it
    defines.  ``path``: the package's folders (default: its own)."""
    for module in sorted(pkgutil.iter_modules(path or __path__), key=lambda m: m.name):
        importlib.import_module(f"{package}.{module.name}")


import_all()

__all__ = ["STRATEGIES", "CompiledPlanner", "Strategy", "StrategyContext", "StrategyKind"]
