"""Bandit policies; importing a family module registers its policies."""

from __future__ import annotations

import importlib
import pkgutil

from dpbandits.policies.base import (
    REGISTRY,
    Policy,
    RunResult,
    get_policy_class,
    make_policy,
    register,
)

__all__ = [
    "REGISTRY", "Policy", "RunResult", "get_policy_class", "load_all", "make_policy", "register",
]


def load_all() -> None:
    """Import every policy module of this package so that all policies are registered."""
    for module in pkgutil.iter_modules(__path__):
        if module.name != "base":
            importlib.import_module(f"{__name__}.{module.name}")
