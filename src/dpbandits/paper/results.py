"""Our results as the paper layer reads them: the summaries and claims tables the caller names,
and the trials a selector picks from a summary.

Selectors filter summary rows by column value (a list means any of; `null` matches a missing ε;
`max`/`min` pick the extreme value among the rows the other keys select; `pick: best|worst`
keeps the best/worst of several algorithm labels, e.g. a grid search).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpbandits.errors import ConfigError

HIGHER_IS_BETTER = {"reward", "mean_reward", "ctr", "np_percent", "np_percent_norm"}
NP_METRICS = {"np_percent": "np", "np_percent_norm": "np_norm"}


class NotComparable(Exception):
    """The results cannot answer the question (too few trials, several rows per trial, ...)."""


class NotRun(NotComparable):
    """There are no results for the question (no summary, or no rows for the selection)."""


def failed_verdict(exc: NotComparable, scale: str | None) -> dict[str, str]:
    """Status and reason when results could not answer: "not comparable" at another scale or
    when they exist but cannot answer, "not run" when there are none."""
    if scale:
        return {"status": "not comparable", "reason": f"{scale}; {exc}"}
    if isinstance(exc, NotRun):
        return {"status": "not run", "reason": str(exc)}
    return {"status": "not comparable", "reason": f"not comparable: {exc}"}


# ---------------------------------------------------------------------------------------------
# Reading


def load_summaries(config: dict[str, Any], paths: Iterable[str | Path]) \
        -> dict[str, pd.DataFrame | None]:
    """summary.csv of every configured experiment among `paths` (<results>/<experiment>/
    summary.csv); None for the experiments with none."""
    by_name = {Path(p).parent.name: Path(p) for p in paths}
    return {name: pd.read_csv(by_name[name]) if name in by_name else None
            for name in config["experiments"]}


def load_claim_tables(config: dict[str, Any], paths: Iterable[str | Path]) \
        -> dict[str, pd.DataFrame]:
    """experiment → the claims table among `paths` its outputs wrote (the first *claims.csv
    output with a verdict or holds column)."""
    from dpbandits.outputs import output_files

    by_name = {Path(p).name: Path(p) for p in paths}
    out: dict[str, pd.DataFrame] = {}
    for experiment, exp in config["experiments"].items():
        names = [Path(f).name for spec in exp.get("outputs", [])
                 for f in output_files(experiment, spec) if f.endswith("claims.csv")]
        for name in names:
            if name not in by_name:
                continue
            table = pd.read_csv(by_name[name], dtype=str, keep_default_na=False)
            if {"verdict", "holds"} & set(table.columns):
                out[experiment] = table
                break
    return out


# ---------------------------------------------------------------------------------------------
# Selection and per-trial metrics


def column_of(summary: pd.DataFrame, key: str) -> str:
    """The summary column of a selector key: the key itself, else its grid parameter column."""
    if key in summary.columns:
        return key
    if f"param_{key}" in summary.columns:
        return f"param_{key}"
    raise NotComparable(f"column {key!r} is not in the results")


def _match(series: pd.Series, want: Any) -> pd.Series:
    wants = want if isinstance(want, list) else [want]
    mask = pd.Series(False, index=series.index)
    for value in wants:
        if value is None or value == "none":
            mask |= series.isna()
        elif isinstance(value, bool) or not isinstance(value, int | float):
            mask |= series.astype(str) == str(value)
        else:
            numeric = pd.to_numeric(series, errors="coerce")
            mask |= np.isclose(numeric.astype(float), float(value), rtol=1e-9, atol=1e-12) \
                & numeric.notna()
    return mask


def select(summary: pd.DataFrame, where: dict[str, Any]) -> pd.DataFrame:
    """Rows matching every key of `where` (`max`/`min` values resolved after the other keys)."""
    rows = summary
    extremes = {}
    for key, want in where.items():
        if key == "pick":
            continue
        if want in ("max", "min"):
            extremes[key] = want
            continue
        rows = rows[_match(rows[column_of(rows, key)], want)]
    for key, which in extremes.items():
        col = column_of(rows, key)
        values = pd.to_numeric(rows[col], errors="coerce").dropna()
        if values.empty:
            return rows.iloc[0:0]
        target = values.max() if which == "max" else values.min()
        rows = rows[_match(rows[col], float(target))]
    return rows


SYMBOLS = {"epsilon": "ε", "alpha": "α", "group_size": "k", "pick": "grid cell"}
"""How a selector's keys are written in the report (the legend of docs/reproduction.md)."""


def _setting(key: str, value: Any) -> str:
    if isinstance(value, list):
        shown = " or ".join(_setting_value(v) for v in value)
    else:
        shown = _setting_value(value)
    return f"{SYMBOLS.get(key, key)} = {shown}"


def _setting_value(value: Any) -> str:
    if value is None:
        return "none"
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def describe(where: dict[str, Any]) -> str:
    """A selector as text, e.g. "GLOC (ε = 4, S = 2)"; a grid-searched algorithm is named by
    its grid (`grid_of`)."""
    name, settings = "", []
    for key, value in where.items():
        if key in ("algorithm", "policy", "grid_of") and not isinstance(value, list):
            name = name or str(value)
        else:
            settings.append(_setting(key, value))
    if not name and not settings:
        return "all rows"
    return f"{name} ({', '.join(settings)})" if name and settings else name or ", ".join(settings)


def higher_is_better(metric: str) -> bool:
    """Whether a larger value of the metric is better (rewards, CTR, NP%)."""
    return metric in HIGHER_IS_BETTER


def with_metric(summary: pd.DataFrame, metric: str, exp: dict[str, Any] | None = None,
                reference: str | None = None) -> pd.DataFrame:
    """The summary with the columns a metric needs: `np_percent`/`np_percent_norm` are NP% and
    normalised NP% against the `reference` label on the same trial, as the AdaPrivate-TS outputs
    define them (dpbandits.outputs.ts.trial_metrics)."""
    if metric not in NP_METRICS:
        return summary
    if reference is None or exp is None:
        raise NotComparable(f"metric {metric} needs a `reference` algorithm label")
    from dpbandits.outputs.ts import trial_metrics

    try:
        return trial_metrics(exp, summary, reference)
    except ConfigError as exc:
        raise NotComparable(str(exc)) from None


BUDGET_USED = "budget_used"
"""The derived metric max(ε spent/ε, δ spent/δ) of a row's privacy ledger (1 = the budget)."""


def metric_values(rows: pd.DataFrame, metric: str) -> pd.Series:
    """Per-row metric: a summary column, `ctr` (= mean_reward), NP% (see with_metric) or
    `budget_used` (the ledger's spent (ε, δ) over the budget, the larger of the two)."""
    if metric == BUDGET_USED:
        needed = ("epsilon_spent", "epsilon", "delta_spent", "delta")
        if any(c not in rows.columns for c in needed):
            raise NotComparable(f"metric {metric!r} needs the columns {', '.join(needed)}")
        used = [pd.to_numeric(rows[spent], errors="coerce") / pd.to_numeric(rows[budget],
                                                                             errors="coerce")
                for spent, budget in (("epsilon_spent", "epsilon"), ("delta_spent", "delta"))]
        both = pd.concat(used, axis=1)
        return both.max(axis=1, skipna=False)
    column = {"ctr": "mean_reward", **NP_METRICS}.get(metric, metric)
    if column not in rows.columns:
        raise NotComparable(f"metric {metric!r} is not in the results")
    return pd.to_numeric(rows[column], errors="coerce")


def trial_values(
    summary: pd.DataFrame,
    where: dict[str, Any],
    metric: str,
    by: str | None = None,
) -> pd.Series:
    """Metric per trial, indexed by (instance_index, seed) (and `by` first when given); the
    summary must carry the metric's columns (with_metric)."""
    rows = select(summary, where)
    if rows.empty:
        raise NotRun(f"no results for {describe(where)}")
    labels = rows["algorithm"].unique()
    if len(labels) > 1 and where.get("pick") in ("best", "worst"):
        means = metric_values(rows, metric).groupby(rows["algorithm"]).mean()
        best = higher_is_better(metric) == (where["pick"] == "best")
        rows = rows[rows["algorithm"] == (means.idxmax() if best else means.idxmin())]
    values = metric_values(rows, metric)
    keys = ([by] if by else []) + ["instance_index", "seed"]
    frame = rows[keys].assign(value=values.to_numpy(float)).dropna(subset=["value"])
    if frame.duplicated(keys).any():
        raise NotComparable(
            f"{describe(where)} selects several rows per trial "
            f"({', '.join(map(str, labels[:3]))}...; ε values "
            f"{sorted(rows['epsilon'].dropna().unique().tolist())}); narrow the selector"
        )
    return frame.set_index(keys)["value"]


class Results:
    """Summaries of the configured experiments, with the metric columns added on demand (cached:
    NP% may rebuild environments)."""

    def __init__(self, experiments: dict[str, dict[str, Any]],
                 summaries: dict[str, pd.DataFrame | None]) -> None:
        self.experiments = experiments
        self.summaries = summaries
        self._frames: dict[tuple[str, str, str | None], pd.DataFrame] = {}

    def frame(self, name: str, metric: str, reference: str | None = None) -> pd.DataFrame:
        """The summary of `name` carrying `metric` (raises NotComparable when it cannot)."""
        summary = self.summaries.get(name)
        if summary is None:
            raise NotRun(f"no results yet (results/{name}/summary.csv)")
        kind = metric if metric in NP_METRICS else "plain"
        key = (name, kind, reference if kind != "plain" else None)
        if key not in self._frames:
            self._frames[key] = with_metric(summary, metric, self.experiments.get(name),
                                            reference)
        return self._frames[key]
