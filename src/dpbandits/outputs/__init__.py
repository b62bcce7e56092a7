"""Figure and table makers by kind; each experiment lists the kinds it wants under `outputs`.

Each kind is an `OutputKind` (one line in `OUTPUTS`): the maker and the names of the files it
writes (relative to the paper folder), so the workflow knows every output before running:
`files(experiment, options) -> list[str]` and the maker is
`make(experiment, exp_config, summary, curves, paper_dir, **options) -> list[Path]`; an option
`published: "<family>:<entry>"` reaches the maker as that entry (a PublishedEntry).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dpbandits.paper.published import published_entry
from dpbandits.registry import Registry


@dataclass(frozen=True)
class OutputKind:
    """A figure/table maker and the files it writes."""

    name: str
    make: Callable[..., Any]
    files: Callable[[str, dict[str, Any]], list[str]]


OUTPUTS: Registry[OutputKind] = Registry("output kind", {
    "regret_curves": "dpbandits.outputs.common:REGRET_CURVES",
    "final_regret_table": "dpbandits.outputs.common:FINAL_REGRET_TABLE",
    "regret_vs_epsilon": "dpbandits.outputs.linear:REGRET_VS_EPSILON",
    "linear_claims": "dpbandits.outputs.linear:LINEAR_CLAIMS",
    "ctr_table": "dpbandits.outputs.realdata:CTR_TABLE",
    "ctr_curve": "dpbandits.outputs.realdata:CTR_CURVE",
    "ts_table1": "dpbandits.outputs.ts:TS_TABLE1",
    "ts_amplification": "dpbandits.outputs.ts:TS_AMPLIFICATION",
    "ts_ablation": "dpbandits.outputs.ts:TS_ABLATION",
    "ts_robustness": "dpbandits.outputs.ts:TS_ROBUSTNESS",
    "ts_group_privacy": "dpbandits.outputs.ts:TS_GROUP_PRIVACY",
})


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
