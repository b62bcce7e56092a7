"""Figure and table makers by kind; each experiment lists the kinds it wants under `outputs`.

A maker is registered with the names of the files it writes (relative to the paper folder), so
the workflow knows every output before running: `@output("kind", files=fn)` where
`fn(experiment, options) -> list[str]` and the maker is
`make(experiment, exp_config, summary, curves, paper_dir, **options) -> list[Path]`.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dpbandits.errors import ConfigError


@dataclass(frozen=True)
class OutputKind:
    name: str
    make: Callable[..., Any]
    files: Callable[[str, dict[str, Any]], list[str]]


OUTPUTS: dict[str, OutputKind] = {}


def output(name: str, files: Callable[[str, dict[str, Any]], list[str]]) -> Callable:
    """Register a figure/table maker under `name`."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        OUTPUTS[name] = OutputKind(name, fn, files)
        return fn

    return wrap


def load_all() -> None:
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


def get_output(name: str) -> OutputKind:
    load_all()
    if name not in OUTPUTS:
        raise ConfigError(f"unknown output kind {name!r}; allowed: {', '.join(sorted(OUTPUTS))}")
    return OUTPUTS[name]


def output_options(spec: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in spec.items() if k != "kind"}


def output_files(experiment: str, spec: dict[str, Any]) -> list[str]:
    """Files (relative to the paper folder) that one output entry of an experiment writes."""
    return get_output(spec["kind"]).files(experiment, output_options(spec))


def make_outputs(experiment: str, exp: dict[str, Any], summary: Any, curves: list[dict[str, Any]],
                 paper_dir: Any) -> list[Any]:
    """Run every output entry of an experiment; return the files written."""
    written = []
    for spec in exp.get("outputs", []):
        kind = get_output(spec["kind"])
        written.extend(kind.make(experiment, exp, summary, curves, paper_dir,
                                 **output_options(spec)))
    return written
