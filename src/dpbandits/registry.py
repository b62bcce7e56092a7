"""One small registry: names → objects, each given as "module:attribute" (or a module path) and
imported on first use.

Policies, instance generators, outputs, audits and the privacy calculators each have one
`Registry`; adding an entry is one line in the table that creates it. Importing lazily keeps a
shard job's start-up to the modules it actually uses.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar

from dpbandits.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """An ordered table of named entries; unknown names give one clear error line."""

    def __init__(self, kind: str, entries: Mapping[str, str]) -> None:
        self.kind = kind
        self._paths: dict[str, str] = dict(entries)
        self._loaded: dict[str, T] = {}

    def __contains__(self, name: object) -> bool:
        return name in self._paths

    def __len__(self) -> int:
        return len(self._paths)

    def names(self) -> list[str]:
        """Every registered name, in table order (nothing is imported)."""
        return list(self._paths)

    def get(self, name: str) -> T:
        """The entry called `name`, imported on first use."""
        if name not in self._paths:
            raise ConfigError(f"unknown {self.kind} {name!r}; allowed: "
                              f"{', '.join(sorted(self._paths))}")
        if name not in self._loaded:
            module, _, attribute = self._paths[name].partition(":")
            loaded = importlib.import_module(module)
            self._loaded[name] = getattr(loaded, attribute) if attribute else loaded
        return self._loaded[name]

    def items(self) -> Iterator[tuple[str, T]]:
        """(name, entry) for every entry (imports them all)."""
        for name in self._paths:
            yield name, self.get(name)

    def add(self, name: str, entry: T | str) -> None:
        """Register one more entry: an object, or its "module:attribute" path."""
        if name in self._paths:
            raise ConfigError(f"{self.kind} {name!r} is registered twice")
        if isinstance(entry, str):
            self._paths[name] = entry
        else:
            self._paths[name] = f"{getattr(entry, '__module__', '?')}:<added>"
            self._loaded[name] = entry

    def remove(self, name: str) -> None:
        """Forget an entry (tests that register temporary ones)."""
        self._paths.pop(name, None)
        self._loaded.pop(name, None)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self)} entries)"


def describe(entry: Any) -> str:
    """First line of an entry's docstring."""
    doc = getattr(entry, "__doc__", None) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""
