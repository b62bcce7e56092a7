"""The files each output kind writes, relative to the paper folder: known without importing the
kind's maker (matplotlib, pandas), as the workflow lists every output when it starts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

FilesOf = Callable[[str, dict[str, Any]], list[str]]
"""(experiment, the output entry's options) → the files it writes."""

TABLE_FORMATS = ("csv", "md", "tex")
FIGURE_FORMATS = ("png", "pdf")


def stem(experiment: str, what: str) -> str:
    """The name an experiment's `what` figure or table is written under."""
    return f"{experiment}_{what}"


def tables(experiment: str, names: tuple[str, ...]) -> list[str]:
    return [f"tables/{stem(experiment, n)}.{ext}" for n in names for ext in TABLE_FORMATS]


def figures(experiment: str, names: tuple[str, ...]) -> list[str]:
    return [f"figures/{stem(experiment, n)}.{ext}" for n in names for ext in FIGURE_FORMATS]


def named(table_names: tuple[str, ...], figure_names: tuple[str, ...] = ()) -> FilesOf:
    """The files of an output that writes these tables and figures for an experiment."""
    return lambda experiment, options: (tables(experiment, table_names)
                                        + figures(experiment, figure_names))


def final_regret_table(experiment: str, options: dict[str, Any]) -> list[str]:
    return [f"tables/{experiment}.{ext}" for ext in TABLE_FORMATS]


def regret_vs_epsilon(experiment: str, options: dict[str, Any]) -> list[str]:
    return [*figures(experiment, ("regret_vs_epsilon",)),
            *tables(experiment, ("regret_vs_epsilon",)),
            f"tables/{stem(experiment, 'runs')}.csv"]


def ctr_table(experiment: str, options: dict[str, Any]) -> list[str]:
    return tables(experiment, ("ctr", "claims") if options.get("published") else ("ctr",))
