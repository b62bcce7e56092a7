"""Instance generators by name: a shard spec's `instance` mapping → an instance object.

An instance object has `info` (ProblemInfo), `environment(trial)` (an Environment whose reward
noise depends only on the trial, so every algorithm sees the same randomness), and `describe()`
(scalars recorded with the shard and in summary.csv, e.g. kappa).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dpbandits.errors import ConfigError

Builder = Callable[[dict[str, Any]], Any]
GENERATORS: dict[str, Builder] = {}


def generator(name: str) -> Callable[[Builder], Builder]:
    """Decorator registering an instance builder under `name`."""

    def wrap(fn: Builder) -> Builder:
        GENERATORS[name] = fn
        return fn

    return wrap


def load_all() -> None:
    import importlib
    import pkgutil

    import dpbandits.instances as pkg

    for module in pkgutil.iter_modules(pkg.__path__):
        if module.name not in ("base", "registry"):
            importlib.import_module(f"{pkg.__name__}.{module.name}")


def build_instance(params: dict[str, Any]) -> Any:
    """Build the instance a shard spec describes; unknown generators fail with one clear line."""
    load_all()
    name = params.get("generator")
    if name not in GENERATORS:
        raise ConfigError(
            f"unknown instance generator {name!r}; allowed: {', '.join(sorted(GENERATORS))}"
        )
    return GENERATORS[name]({k: v for k, v in params.items() if k != "generator"})
