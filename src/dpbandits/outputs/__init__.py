"""Figure and table makers by kind; each experiment lists the kinds it wants under `outputs`.

Each kind is an `OutputKind` (one line in `OUTPUTS`): the maker and the names of the files it
writes (relative to the paper folder), so the workflow knows every output before running:
`files(experiment, options) -> list[str]` and the maker is
`make(experiment, exp_config, summary, curves, paper_dir, **options) -> list[Path]`; an option
`published: "<family>:<entry>"` reaches the maker as that entry (a PublishedEntry).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dpbandits.outputs import files
from dpbandits.outputs.files import FilesOf
from dpbandits.paper.published import published_entry
from dpbandits.registry import Registry


@dataclass(frozen=True)
class OutputKind:
    """A figure/table maker ("module:function", imported when it first makes something) and
    the files it writes (`dpbandits.outputs.files`)."""

    name: str
    maker: str
    files: FilesOf

    def maker_function(self) -> Callable[..., list[Any]]:
        """The maker, its module imported on first use."""
        module, _, function = self.maker.partition(":")
        return getattr(importlib.import_module(module), function)

    def make(self, *args: Any, **kwargs: Any) -> list[Any]:
        """Run the maker: `make(experiment, exp_config, summary, curves, paper_dir, **options)`."""
        return self.maker_function()(*args, **kwargs)


OUTPUTS: Registry[OutputKind] = Registry("output kind", {})
for _kind in (
    OutputKind("regret_curves", "dpbandits.outputs.common:regret_curves",
               files.named((), ("regret",))),
    OutputKind("final_regret_table", "dpbandits.outputs.common:final_regret_table",
               files.final_regret_table),
    OutputKind("regret_vs_epsilon", "dpbandits.outputs.linear:regret_vs_epsilon",
               files.regret_vs_epsilon),
    OutputKind("linear_claims", "dpbandits.outputs.linear:linear_claims",
               files.named(("claims",))),
    OutputKind("ctr_table", "dpbandits.outputs.realdata:ctr_table", files.ctr_table),
    OutputKind("ctr_curve", "dpbandits.outputs.realdata:ctr_curve", files.named((), ("ctr",))),
    OutputKind("ts_table1", "dpbandits.outputs.ts:ts_table1",
               files.named(("table1", "tests", "cells"), ("np",))),
    OutputKind("ts_amplification", "dpbandits.outputs.ts:ts_amplification",
               files.named(("amplification",), ("amplification",))),
    OutputKind("ts_ablation", "dpbandits.outputs.ts:ts_ablation",
               files.named(("ablation",), ("ablation",))),
    OutputKind("ts_robustness", "dpbandits.outputs.ts:ts_robustness",
               files.named(("robustness",), ("robustness",))),
    OutputKind("ts_group_privacy", "dpbandits.outputs.ts:ts_group_privacy",
               files.named(("group_privacy",))),
):
    OUTPUTS.add(_kind.name, _kind)


def get_output(name: str) -> OutputKind:
    """The output kind registered as `name` (one error line listing the kinds otherwise)."""
    return OUTPUTS.get(name)


def output_options(spec: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in spec.items() if k != "kind"}


def output_files(experiment: str, spec: dict[str, Any]) -> list[str]:
    """Files (relative to the paper folder) that one output entry of an experiment writes."""
    return get_output(spec["kind"]).files(experiment, output_options(spec))


def make_outputs(experiment: str, exp: dict[str, Any], summary: Any, curves: list[dict[str, Any]],
                 paper_dir: Any, published: Mapping[str, dict[str, Any]] | None = None,
                 config: dict[str, Any] | None = None, paper_config: Any = None) -> list[Any]:
    """Run every output entry of an experiment, its `published: "<family>:<entry>"` looked up in
    `published`, with the project's colours for the run's `config` (dpbandits.plots) and the
    scale mark against the paper-scale config (dpbandits.scale); return the files written."""
    from dpbandits import plots, scale

    horizon = int(summary["T"].max()) if "T" in getattr(summary, "columns", ()) \
        else scale.horizon_of(exp)
    note = scale.scale_note(experiment, horizon, paper_config)
    written = []
    with plots.using_config(config or {"experiments": {experiment: exp}}, paper_config), \
            scale.marked(note):
        for spec in exp.get("outputs", []):
            kind = get_output(spec["kind"])
            options = output_options(spec)
            if options.get("published"):
                options["published"] = published_entry(published or {}, options["published"])
            written.extend(kind.make(experiment, exp, summary, curves, paper_dir, **options))
    return written
