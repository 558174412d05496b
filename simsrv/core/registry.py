"""Name -> implementation registries (map kinds, mobility models, strategies, balancers).

A new map kind, mobility model or strategy is a new module that calls ``REGISTRY.register``;
nothing else in the code branches on its name.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from simsrv.core.errors import InputError

T = TypeVar("T")


class Registry(Generic[T]):
    """A mapping from names to implementations with errors that list the allowed names."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._items: dict[str, T] = {}

    def register(self, name: str, item: T) -> T:
        """Register ``item`` under ``name``; registering a name twice is a programming error."""
        if name in self._items:
            raise RuntimeError(f"{self.what} {name!r} registered twice")
        self._items[name] = item
        return item

    def get(self, name: str, field: str) -> T:
        """Return the item called ``name``; ``field`` names the scenario field in the error."""
        try:
            return self._items[name]
        except (KeyError, TypeError):
            raise InputError(
                f"{field}: unknown {self.what} {name!r}; allowed: {', '.join(self.names())}"
            ) from None

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._items)
