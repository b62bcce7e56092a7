"""One published number against ours: the agreement rule that applies (paper/claims.yaml
`agreement`, else the entry's own, else ±10 %) and the verdict (dpbandits.paper.verdict)."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpbandits import stats
from dpbandits.data.provenance import data_reason
from dpbandits.errors import ConfigError
from dpbandits.paper.published import ALPHA
from dpbandits.paper.results import (
    NotComparable,
    Results,
    failed_verdict,
    metric_values,
    trial_values,
)
from dpbandits.paper.verdict import DIVERGED_FACTOR, REPRODUCED, Decision, equivalence, plain

DEFAULT_RULE = {"kind": "relative", "tolerance": 0.10}
RULE_KINDS = ("relative", "factor", "absolute")
LABEL_EPS = re.compile(r"^(?P<alg>.+?)\s+ε0?\s*=\s*(?P<eps>[0-9.eE+-]+)$")


@dataclass
class NumberResult:
    """One published number next to ours."""

    paper: str
    family: str
    entry: str
    source: str
    experiment: str
    label: str
    column: str
    grid: str
    published: float
    status: str
    reason: str
    rule: str = ""
    mean: float | None = None
    se: float | None = None
    n: int = 0
    accounting: str = ""
    median: float | None = None
    diverged: int = 0
    trials_needed: int | None = None
    explanation: str = ""


def agreement_rule(ref: str, label: str, entry: dict[str, Any],
                   rules: list[dict[str, Any]], default: dict[str, Any]) -> dict[str, Any]:
    """First rule of claims.yaml `agreement` matching (entry, label); else the entry's own
    `agreement`; else the default (±10 %)."""
    base = label_parts(label)[0]
    for rule in rules:
        if not fnmatch.fnmatchcase(ref, rule.get("published", "*")):
            continue
        patterns = rule.get("algorithms")
        if patterns and not any(fnmatch.fnmatchcase(label, p) or fnmatch.fnmatchcase(base, p)
                                for p in patterns):
            continue
        return _checked_rule({**rule["rule"], "basis": rule.get("basis", ""),
                              "note": rule.get("note", "")}, ref)
    if entry.get("agreement"):
        return _checked_rule(entry["agreement"], ref)
    return _checked_rule(default, ref)


def _checked_rule(rule: dict[str, Any], ref: str) -> dict[str, Any]:
    if rule.get("kind") not in RULE_KINDS:
        raise ConfigError(f"agreement rule for {ref}: kind {rule.get('kind')!r} is not allowed; "
                          f"allowed: {', '.join(RULE_KINDS)}")
    tol = rule.get("tolerance")
    if not isinstance(tol, int | float) or tol <= 0 or (rule["kind"] == "factor" and tol < 1):
        raise ConfigError(f"agreement rule for {ref}: tolerance {tol!r} is not allowed; "
                          "allowed: a positive number (≥ 1 for factor)")
    return rule


def describe_rule(rule: dict[str, Any]) -> str:
    """An agreement rule as text, e.g. "±5 % (basis)"."""
    tol = rule["tolerance"]
    text = {
        "relative": f"±{100 * tol:g} %",
        "factor": f"within a factor {tol:g}",
        "absolute": f"±{tol:g}",
    }[rule["kind"]]
    return f"{text} ({rule['basis']})" if rule.get("basis") else text


def margin_band(rule: dict[str, Any], published: float) -> tuple[float, float]:
    """The equivalence band [low, high] a rule puts around a published value."""
    kind, tol = rule["kind"], float(rule["tolerance"])
    if kind == "relative":
        edges = (published * (1 - tol), published * (1 + tol))
    elif kind == "factor":
        edges = (published / tol, published * tol)
    else:
        edges = (published - tol, published + tol)
    return min(edges), max(edges)


def apply_rule(rule: dict[str, Any], mean: float, se: float, n: int, published: float,
               alpha: float = ALPHA) -> Decision | None:
    """Equivalence of our mean with the published value within the rule's margin (two one-sided
    tests, precision gate: docs/reproduction.md, "Verdicts"); None for a single trial."""
    if n < 2:
        return None
    low, high = margin_band(rule, published)
    decision = equivalence(mean, se, n, low, high, alpha, n - 1)
    decision.reason = f"{decision.reason} ({plain(mean / published)}× published)" \
        if published else decision.reason
    return decision


def diverged_runs(values: np.ndarray) -> tuple[float, int]:
    """(median, number of runs above DIVERGED_FACTOR × the median) of a cell's regrets."""
    median = float(np.median(values))
    return median, int(np.sum(values > DIVERGED_FACTOR * median)) if median > 0 else 0


def label_parts(label: str) -> tuple[str, float | None]:
    """"Private-GLM ε=4" → ("Private-GLM", 4.0); "GLOC" → ("GLOC", None)."""
    m = LABEL_EPS.match(label)
    if m:
        return m.group("alg"), float(m.group("eps"))
    return label, None


def grid_text(column: str, grid: Any) -> str:
    """A published grid value as text, e.g. "S=2"; "" for none."""
    if grid is None:
        return ""
    try:
        return f"{column}={float(grid):g}"
    except (TypeError, ValueError):
        return f"{column}={grid}"


def _number_where(label: str, column: str | None, grid: Any, entry: dict[str, Any],
                  summary: pd.DataFrame) -> dict[str, Any]:
    algorithm, eps = label_parts(label)
    where: dict[str, Any] = dict(entry.get("where") or {})
    key = "algorithm"
    if not (summary["algorithm"] == algorithm).any() and "grid_of" in summary.columns \
            and (summary["grid_of"] == algorithm).any():
        key = "grid_of"
    where[key] = algorithm
    if eps is not None:
        where["epsilon"] = eps
    elif column != "epsilon" and "epsilon" not in where:
        where["epsilon"] = None
    if grid is not None and column:
        where[column] = _grid_value(grid)
    if entry.get("pick"):
        where["pick"] = entry["pick"]
    return where


def _grid_value(grid: Any) -> Any:
    try:
        return float(grid)
    except (TypeError, ValueError):
        return grid


def horizon_reason(summary: pd.DataFrame, horizon: Any) -> str | None:
    """None when the results ran the published horizon; else why they are not comparable."""
    if horizon is None:
        return None
    ours = int(summary["T"].max())
    if ours == int(horizon):
        return None
    scale = " (smoke scale)" if ours < int(horizon) else ""
    return f"not comparable{scale}: T = {ours} here, published T = {int(horizon)}"


def comparability(summary: pd.DataFrame, horizon: Any) -> str | None:
    """None when the results are comparable with the published ones: the published horizon
    (horizon_reason) and, for real data, the pinned archives (docs/realdata.md, "Provenance")."""
    reasons = [horizon_reason(summary, horizon), data_reason(summary)]
    return "; ".join(r for r in reasons if r) or None


def compare_number(ref: str, entry: dict[str, Any], label: str, grid: Any, published: float,
                   results: Results, experiment: str | None, rule: dict[str, Any],
                   paper: str) -> NumberResult:
    """Verdict of one published number against our trials."""
    family, key = ref.split(":", 1)
    column = str(entry.get("column", ""))
    base = NumberResult(paper=paper, family=family, entry=key, source=entry.get("source", ""),
                        experiment=experiment or "", label=label, column=column,
                        grid=grid_text(column, grid), published=published, status="not run",
                        reason="", rule=describe_rule(rule))
    if experiment is None:
        base.reason = "no experiment in the configuration measures this entry"
        return base
    if results.summaries.get(experiment) is None:
        base.reason = f"no results yet (results/{experiment}/summary.csv)"
        return base
    metric = entry.get("metric", "regret")
    scale = comparability(results.summaries[experiment], entry.get("horizon"))
    try:
        summary = results.frame(experiment, metric, entry.get("reference"))
        where = _number_where(label, column or None, grid, entry, summary)
        values = trial_values(summary, where, metric)
    except NotComparable as exc:
        verdict = failed_verdict(exc, scale)
        base.status, base.reason = verdict["status"], verdict["reason"]
        return base
    arr = values.to_numpy(float)
    base.n = len(arr)
    base.mean = float(arr.mean())
    base.se = float(stats.standard_error(arr)) if len(arr) > 1 else None
    rows = summary[summary["algorithm"].isin([where.get("algorithm", where.get("grid_of"))])]
    base.accounting = ",".join(sorted(set(rows["accounting"].dropna().astype(str)))) \
        if "accounting" in rows else ""
    if scale:
        base.status, base.reason = "not comparable", scale
        return base
    if metric == "regret":
        base.median, base.diverged = diverged_runs(arr)
    decision = apply_rule(rule, base.mean, base.se or 0.0, base.n, published)
    if decision is None:
        base.status, base.reason = "not comparable", "not comparable: one trial, no standard error"
        return base
    base.status, base.reason = decision.status, decision.reason
    base.trials_needed = decision.trials_needed
    if decision.status != REPRODUCED:
        base.explanation = " ".join(str(rule.get("note", "")).split())
    return base


def also_measured(entry: dict[str, Any], summary: pd.DataFrame, numbers: list[NumberResult]) \
        -> list[dict[str, Any]]:
    """Groups of the experiment with no published value (other variants, strict accounting)."""
    column = entry.get("column")
    try:
        metric_values(summary, entry.get("metric", "regret"))
    except NotComparable:
        return []
    keys = ["algorithm", "epsilon"] + ([column] if column and column in summary else [])
    published = {(n.label, n.grid) for n in numbers}
    out = []
    for values, df in summary.groupby(keys, dropna=False, sort=True):
        algorithm, eps = values[0], values[1]
        label = algorithm if pd.isna(eps) else f"{algorithm} ε={eps:g}"
        grid = grid_text(column, values[2]) if len(values) > 2 else ""
        if (label, grid) in published:
            continue
        arr = metric_values(df, entry.get("metric", "regret")).dropna().to_numpy(float)
        if not len(arr):
            continue
        se = float(stats.standard_error(arr)) if len(arr) > 1 else None
        accounting = df["accounting"].iloc[0] if "accounting" in df else ""
        out.append({"label": label, "grid": grid, "mean": float(arr.mean()), "se": se,
                    "n": len(arr), "accounting": "" if pd.isna(eps) else accounting})
    return out
