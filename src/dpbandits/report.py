"""Reproduction report: every published number and claim of the three papers next to ours, with a
verdict (reproduced / differs, with the reason / not run) → paper/reproduction.{md,html,json}.

Published numbers come from `paper/published/<family>.yaml` (entries with `values`, optionally
`claims`; format in paper/published/README.md), agreement rules and the statistically tested
claims from `paper/claims.yaml` (see dpbandits.claims). Agreement rules follow glm spec §6.6
where it gives one; otherwise a number is reproduced when our mean is within 2 standard errors.
"""

from __future__ import annotations

import fnmatch
import html
import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from dpbandits.atomic import write_text_atomic
from dpbandits.claims import (
    STATUSES,
    ClaimResult,
    NotComparable,
    Results,
    evaluate_claim,
    load_claims_file,
    metric_values,
    trial_values,
)
from dpbandits.errors import ConfigError

PAPERS = {
    "glm": "Shuffle and Joint Differential Privacy for Generalized Linear Contextual Bandits "
           "(Sarmasarkar)",
    "linear": "Differentially Private Stochastic Linear Bandits: (Almost) for Free "
              "(Hanna, Girgis, Fragouli, Diggavi)",
    "ts": "AdaPrivate-TS: Private Thompson Sampling for Contextual Bandits with Privacy "
          "Amplification (Riyazat, Ukwatta)",
}
FAMILY_PAPER = {"realdata": "ts"}
DEFAULT_RULE = {"kind": "standard_errors", "tolerance": 2.0}
RULE_KINDS = ("relative", "factor", "standard_errors", "absolute")
LABEL_EPS = re.compile(r"^(?P<alg>.+?)\s+ε0?\s*=\s*(?P<eps>[0-9.eE+-]+)$")


# ---------------------------------------------------------------------------------------------
# Data model


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


@dataclass
class PublishedClaimResult:
    """One claim of a published-results file with the verdict of its check."""

    paper: str
    family: str
    entry: str
    key: str
    text: str
    published: str
    experiment: str
    status: str
    reason: str
    measured: str = ""
    test: str = ""
    via: str = ""


@dataclass
class Reproduction:
    """Everything the report shows, in display order."""

    numbers: list[NumberResult] = field(default_factory=list)
    published_claims: list[PublishedClaimResult] = field(default_factory=list)
    claims: list[ClaimResult] = field(default_factory=list)
    extras: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    experiments: dict[str, dict[str, Any]] = field(default_factory=dict)

    def verdict_rows(self) -> list[Any]:
        """Rows counted in the summary: numbers, published claims, claims covering none."""
        own = [c for c in self.claims if not c.covers]
        return [*self.numbers, *self.published_claims, *own]

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for row in self.verdict_rows():
            counts[row.status] += 1
        return counts

    def summary_line(self) -> str:
        c = self.counts()
        return f"{c['reproduced']} reproduced, {c['differs']} differ, {c['not run']} not run"

    def as_dict(self) -> dict[str, Any]:
        return {
            "summary": self.counts(),
            "summary_line": self.summary_line(),
            "numbers": [asdict(r) for r in self.numbers],
            "published_claims": [asdict(r) for r in self.published_claims],
            "claims": [c.as_dict() for c in self.claims],
            "extras": self.extras,
            "experiments": self.experiments,
        }


# ---------------------------------------------------------------------------------------------
# Published results


def load_published_dir(folder: str | Path) -> dict[str, dict[str, Any]]:
    """`<family>:<entry>` → entry mapping, for every paper/published/*.yaml."""
    out = {}
    for path in sorted(Path(folder).glob("*.yaml")):
        data = yaml.safe_load(path.read_text()) or {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path} must be a mapping of entries")
        for key, entry in data.items():
            if not isinstance(entry, dict):
                raise ConfigError(f"{path}: entry {key!r} must be a mapping")
            out[f"{path.stem}:{key}"] = entry
    return out


def published_numbers(ref: str, entry: dict[str, Any]) -> list[tuple[str, Any, float]]:
    """(label, grid value or None, published number) of an entry's `values`."""
    out = []
    for label, cells in (entry.get("values") or {}).items():
        if isinstance(cells, dict):
            if not entry.get("column"):
                raise ConfigError(f"published {ref}: values of {label!r} are per grid value but "
                                  "the entry has no `column`")
            out.extend((str(label), g, float(v)) for g, v in cells.items())
        else:
            out.append((str(label), None, float(cells)))
    return out


def published_claims(entry: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(key, claim) of an entry's `claims`: the claim's `id`, else its 1-based position."""
    return [(str(c.get("id", i + 1)), c) for i, c in enumerate(entry.get("claims") or [])]


METADATA_KEYS = {
    "source", "summary", "note", "notes", "text", "description", "instance", "x_axis", "y_axis",
    "column", "horizon", "approximate", "experiment", "metric", "reference", "where", "pick",
    "agreement", "K", "d", "T", "trials", "seeds", "delta", "epsilon_user", "values", "claims",
}
TEXT_KEYS = {"source", "summary", "note", "notes", "text", "description"}


def published_items(entry: dict[str, Any]) -> list[tuple[str, str]]:
    """(path, value) of every other published number of an entry (outside `values`, `claims`
    and the setting keys): numeric leaves, and short texts with a digit such as "<0.01"."""
    out: list[tuple[str, str]] = []

    def walk(node: Any, path: list[str]) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if (not path and key in METADATA_KEYS) or key in TEXT_KEYS:
                    continue
                walk(value, [*path, str(key)])
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, [*path, str(i)])
        elif isinstance(node, int | float) and not isinstance(node, bool):
            out.append(("/".join(path), f"{node:g}"))
        elif isinstance(node, str) and re.search(r"\d", node) and len(node) <= 40:
            out.append(("/".join(path), node))

    walk(entry, [])
    return out


def covers_item(cover: str, ref: str, path: str) -> bool:
    """Whether a claims.yaml `covers` value ("<ref>@<path or path prefix>") names an item."""
    if not cover.startswith(f"{ref}@"):
        return False
    prefix = cover[len(ref) + 1:]
    return path == prefix or path.startswith(prefix + "/")


def experiment_for(ref: str, entry: dict[str, Any], config: dict[str, Any]) -> str | None:
    """The experiment that measures a published entry: its `experiment` key, else the one whose
    outputs reference it, else the experiment named `<family>_<entry>` or `<entry>`."""
    if entry.get("experiment"):
        return str(entry["experiment"])
    experiments = config["experiments"]
    for name, exp in experiments.items():
        if any(spec.get("published") == ref for spec in exp.get("outputs", [])):
            return name
    family, key = ref.split(":", 1)
    for name in (f"{family}_{key}", key):
        if name in experiments:
            return name
    return None


# ---------------------------------------------------------------------------------------------
# Agreement rules


def agreement_rule(ref: str, label: str, entry: dict[str, Any],
                   rules: list[dict[str, Any]], default: dict[str, Any]) -> dict[str, Any]:
    """First rule of claims.yaml `agreement` matching (entry, label); else the entry's own
    `agreement`; else the default (2 standard errors)."""
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
    tol = rule["tolerance"]
    text = {
        "relative": f"±{100 * tol:g} %",
        "factor": f"within a factor {tol:g}",
        "standard_errors": f"±{tol:g} s.e.",
        "absolute": f"±{tol:g}",
    }[rule["kind"]]
    return f"{text} ({rule['basis']})" if rule.get("basis") else text


def apply_rule(rule: dict[str, Any], mean: float, se: float, n: int, published: float) \
        -> tuple[bool | None, str]:
    """(agrees, how far off); None when the rule cannot be applied (e.g. s.e. of one trial)."""
    kind, tol = rule["kind"], float(rule["tolerance"])
    if kind == "relative":
        rel = mean / published - 1
        return abs(rel) <= tol, f"{100 * rel:+.1f} % from published"
    if kind == "factor":
        ratio = mean / published
        return 1 / tol <= ratio <= tol, f"{ratio:.2f}× published"
    if kind == "absolute":
        diff = mean - published
        return abs(diff) <= tol, f"{diff:+.4g} from published"
    if n < 2:
        return None, "one trial: no standard error"
    if se == 0:
        same = math.isclose(mean, published, rel_tol=1e-9, abs_tol=1e-12)
        return same, "no spread across trials"
    z = (mean - published) / se
    return abs(z) <= tol, f"{z:+.1f} s.e. from published"


# ---------------------------------------------------------------------------------------------
# Comparisons


def label_parts(label: str) -> tuple[str, float | None]:
    """"Private-GLM ε=4" → ("Private-GLM", 4.0); "GLOC" → ("GLOC", None)."""
    m = LABEL_EPS.match(label)
    if m:
        return m.group("alg"), float(m.group("eps"))
    return label, None


def _grid_text(column: str, grid: Any) -> str:
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


def compare_number(ref: str, entry: dict[str, Any], label: str, grid: Any, published: float,
                   results: Results, experiment: str | None, rule: dict[str, Any],
                   paper: str) -> NumberResult:
    """Verdict of one published number against our trials."""
    family, key = ref.split(":", 1)
    column = str(entry.get("column", ""))
    base = NumberResult(paper=paper, family=family, entry=key, source=entry.get("source", ""),
                        experiment=experiment or "", label=label, column=column,
                        grid=_grid_text(column, grid), published=published, status="not run",
                        reason="", rule=describe_rule(rule))
    if experiment is None:
        base.reason = "no experiment in the configuration measures this entry"
        return base
    if results.summaries.get(experiment) is None:
        base.reason = f"no results yet (results/{experiment}/summary.csv)"
        return base
    metric = entry.get("metric", "regret")
    scale = horizon_reason(results.summaries[experiment], entry.get("horizon"))
    try:
        summary = results.frame(experiment, metric, entry.get("reference"))
        where = _number_where(label, column or None, grid, entry, summary)
        values = trial_values(summary, where, metric)
    except NotComparable as exc:
        base.reason = f"{scale}; {exc}" if scale else f"not comparable: {exc}"
        return base
    arr = values.to_numpy(float)
    base.n = len(arr)
    base.mean = float(arr.mean())
    base.se = float(arr.std(ddof=1) / math.sqrt(len(arr))) if len(arr) > 1 else None
    rows = summary[summary["algorithm"].isin([where.get("algorithm", where.get("grid_of"))])]
    base.accounting = ",".join(sorted(set(rows["accounting"].dropna().astype(str)))) \
        if "accounting" in rows else ""
    if scale:
        base.reason = scale
        return base
    agrees, how = apply_rule(rule, base.mean, base.se or 0.0, base.n, published)
    if agrees is None:
        base.reason = f"not comparable: {how}"
        return base
    base.status = "reproduced" if agrees else "differs"
    note = rule.get("note")
    base.reason = how if agrees else f"{how}; allowed {describe_rule(rule).split(' (')[0]}"
    if note and not agrees:
        base.reason += f" — {note}"
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
        grid = _grid_text(column, values[2]) if len(values) > 2 else ""
        if (label, grid) in published:
            continue
        arr = metric_values(df, entry.get("metric", "regret")).dropna().to_numpy(float)
        if not len(arr):
            continue
        se = float(arr.std(ddof=1) / math.sqrt(len(arr))) if len(arr) > 1 else None
        accounting = df["accounting"].iloc[0] if "accounting" in df else ""
        out.append({"label": label, "grid": grid, "mean": float(arr.mean()), "se": se,
                    "n": len(arr), "accounting": "" if pd.isna(eps) else accounting})
    return out


# ---------------------------------------------------------------------------------------------
# Published claims: our tested claims that cover them, else the family's claims table


VERDICT_WORDS = {"reproduced": "reproduced", "supported": "reproduced", "holds": "reproduced",
                 "true": "reproduced", "yes": "reproduced", "differs": "differs",
                 "not supported": "differs", "false": "differs", "no": "differs"}


def family_claims_table(experiment: str, exp: dict[str, Any], paper_dir: Path) \
        -> pd.DataFrame | None:
    """The claims table (CSV with a verdict/holds column) an experiment's outputs wrote."""
    from dpbandits.outputs import output_files

    for spec in exp.get("outputs", []):
        for name in output_files(experiment, spec):
            if not name.endswith("claims.csv"):
                continue
            path = paper_dir / name
            if path.is_file():
                table = pd.read_csv(path, dtype=str, keep_default_na=False)
                if {"verdict", "holds"} & set(table.columns):
                    return table
    return None


def _table_verdict(table: pd.DataFrame, key: str, claim: dict[str, Any]) \
        -> tuple[str, str] | None:
    text = str(claim.get("text", "")).strip()
    for _, row in table.iterrows():
        names = {str(row.get(c, "")).strip() for c in ("claim", "id", "statement", "text")}
        if key in names or (text and text in names):
            verdict = str(row.get("verdict", row.get("holds", ""))).strip()
            measured = str(row.get("measured", row.get("ours", ""))).strip()
            word = verdict.lower().split(" (")[0]
            return VERDICT_WORDS.get(word, "not run"), measured or verdict
    return None


def _combine(results: list[ClaimResult]) -> tuple[str, str, str, str]:
    statuses = {r.status for r in results}
    status = "differs" if "differs" in statuses else (
        "reproduced" if statuses == {"reproduced"} else "not run")
    chosen = [r for r in results if r.status == status] or results
    reason = "; ".join(f"{r.id}: {r.reason}" for r in chosen)
    measured = "; ".join(r.measured for r in chosen if r.measured)
    test = "; ".join(sorted({r.test for r in chosen if r.test}))
    return status, reason, measured, test


def check_published_claim(ref: str, entry: dict[str, Any], key: str, claim: dict[str, Any],
                          experiment: str | None, summary: pd.DataFrame | None,
                          config: dict[str, Any], paper_dir: Path,
                          claim_results: list[ClaimResult], paper: str) -> PublishedClaimResult:
    """Verdict of a published claim: from the claims.yaml tests that cover it, else from the
    claims table the experiment's outputs wrote (results at another horizon: not comparable)."""
    family, entry_key = ref.split(":", 1)
    base = PublishedClaimResult(
        paper=paper, family=family, entry=entry_key, key=key,
        text=str(claim.get("text", key)).strip(), published=str(claim.get("published", "")),
        experiment=experiment or "", status="not run", reason="")
    cover = [r for r in claim_results if f"{ref}#{key}" in r.covers]
    if cover:
        status, reason, measured, test = _combine(cover)
        base.status, base.reason, base.measured, base.test = status, reason, measured, test
        base.via = "paper/claims.yaml: " + ", ".join(r.id for r in cover)
        return base
    if experiment is None:
        base.reason = "no experiment in the configuration measures this entry"
        return base
    if summary is None:
        base.reason = f"no results yet (results/{experiment}/summary.csv)"
        return base
    table = family_claims_table(experiment, config["experiments"][experiment], paper_dir)
    found = _table_verdict(table, key, claim) if table is not None else None
    if found is None:
        base.reason = "no check of this claim in paper/claims.yaml or the experiment's claims table"
        return base
    status, measured = found
    base.measured, base.via = measured, f"{experiment} claims table (direction check, no test)"
    scale = horizon_reason(summary, entry.get("horizon", claim.get("horizon")))
    if scale:
        base.reason = scale
        return base
    base.status = status
    base.reason = {"reproduced": "direction holds", "differs": "direction does not hold"}.get(
        status, "the claims table has no verdict")
    return base


def check_published_item(ref: str, path: str, value: str, experiment: str | None,
                         claim_results: list[ClaimResult], paper: str) -> PublishedClaimResult:
    """Verdict of a published number outside `values`: from the claims.yaml tests covering it."""
    family, entry_key = ref.split(":", 1)
    base = PublishedClaimResult(
        paper=paper, family=family, entry=entry_key, key=f"@{path}",
        text=path.replace("/", " › "), published=value, experiment=experiment or "",
        status="not run", reason="")
    cover = [r for r in claim_results if any(covers_item(c, ref, path) for c in r.covers)]
    if not cover:
        base.reason = ("no comparison is defined for this published number (a claim in "
                       "paper/claims.yaml can cover it)")
        return base
    status, reason, measured, test = _combine(cover)
    base.status, base.reason, base.measured, base.test = status, reason, measured, test
    base.via = "paper/claims.yaml: " + ", ".join(r.id for r in cover)
    return base


# ---------------------------------------------------------------------------------------------
# Building the report


def load_summaries(config: dict[str, Any], results_dir: str | Path) \
        -> dict[str, pd.DataFrame | None]:
    """summary.csv of every configured experiment that has one (None otherwise)."""
    out: dict[str, pd.DataFrame | None] = {}
    for name in config["experiments"]:
        path = Path(results_dir) / name / "summary.csv"
        out[name] = pd.read_csv(path) if path.is_file() else None
    return out


def paper_of(ref: str, experiment: str | None, config: dict[str, Any]) -> str:
    if experiment and experiment in config["experiments"]:
        return config["experiments"][experiment].get("paper", "")
    family = ref.split(":", 1)[0]
    return FAMILY_PAPER.get(family, family)


def build(config: dict[str, Any], results_dir: str | Path, paper_dir: str | Path,
          published_dir: str | Path, claims_path: str | Path) -> Reproduction:
    """Every verdict of the report from the configuration, the results and the published files."""
    paper_dir = Path(paper_dir)
    summaries = load_summaries(config, results_dir)
    claims_file = load_claims_file(claims_path)
    rules = claims_file.get("agreement") or []
    default = claims_file.get("default_agreement") or DEFAULT_RULE
    results = Results(config["experiments"], summaries)
    horizons = claims_file.get("paper_horizons") or {}
    rep = Reproduction()
    rep.claims = [evaluate_claim(c, results) for c in claims_file["claims"]]
    for name, summary in summaries.items():
        exp = config["experiments"][name]
        rep.experiments[name] = {
            "paper": exp.get("paper", ""), "group": exp.get("group", "synthetic"),
            "description": exp.get("description", ""),
            "T": None if summary is None else int(summary["T"].max()),
            "trials": None if summary is None else int(summary["seed"].nunique()),
        }
    for ref, entry in load_published_dir(published_dir).items():
        experiment = experiment_for(ref, entry, config)
        summary = summaries.get(experiment) if experiment else None
        paper = paper_of(ref, experiment, config)
        if entry.get("horizon") is None and experiment in horizons:
            entry = {**entry, "horizon": horizons[experiment]}
        rep.entries[ref] = {"source": entry.get("source", ""), "experiment": experiment,
                            "paper": paper, "horizon": entry.get("horizon"),
                            "metric": entry.get("metric", "regret"),
                            "approximate": bool(entry.get("approximate"))}
        numbers = []
        for label, grid, value in published_numbers(ref, entry):
            rule = agreement_rule(ref, label, entry, rules, default)
            numbers.append(compare_number(ref, entry, label, grid, value, results, experiment,
                                          rule, paper))
        rep.numbers.extend(numbers)
        if summary is not None and numbers:
            try:
                frame = results.frame(experiment, entry.get("metric", "regret"),
                                      entry.get("reference"))
                rep.extras[ref] = also_measured(entry, frame, numbers)
            except NotComparable:
                rep.extras[ref] = []
        for key, claim in published_claims(entry):
            rep.published_claims.append(check_published_claim(
                ref, entry, key, claim, experiment, summary, config, paper_dir, rep.claims, paper))
        for path, value in published_items(entry):
            rep.published_claims.append(check_published_item(ref, path, value, experiment,
                                                              rep.claims, paper))
    known = {f"{r.family}:{r.entry}#{r.key}" for r in rep.published_claims}
    items = [(f"{r.family}:{r.entry}", r.key[1:]) for r in rep.published_claims
             if r.key.startswith("@")]
    for claim in rep.claims:
        missing = [c for c in claim.covers if c not in known
                   and not any(covers_item(c, ref, path) for ref, path in items)]
        if missing:
            raise ConfigError(f"paper/claims.yaml claim {claim.id} covers {', '.join(missing)}, "
                              "which no published file lists")
    return rep


# ---------------------------------------------------------------------------------------------
# Rendering


def _num(x: float | None, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "—"
    return f"{x:.{digits}g}"


def _ours(r: NumberResult) -> str:
    if r.mean is None:
        return "—"
    se = f" ± {_num(r.se)}" if r.se is not None else ""
    return f"{_num(r.mean)}{se} (n = {r.n})"


def _verdict(status: str, reason: str) -> str:
    return f"**{status}**" + (f": {reason}" if reason else "")


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    def cell(text: Any) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _sections(rep: Reproduction) -> list[dict[str, Any]]:
    """Display structure shared by the Markdown and HTML renderings."""
    papers = list(PAPERS) + sorted({e["paper"] for e in rep.entries.values()} - set(PAPERS))
    out = []
    for paper in papers:
        blocks = []
        for ref, info in rep.entries.items():
            if info["paper"] != paper:
                continue
            numbers = [r for r in rep.numbers if f"{r.family}:{r.entry}" == ref]
            claims = [r for r in rep.published_claims if f"{r.family}:{r.entry}" == ref]
            exp = info["experiment"]
            meta = rep.experiments.get(exp or "", {})
            where = f"experiment `{exp}`" if exp else "no experiment configured"
            if meta.get("T"):
                where += f" (T = {meta['T']}, {meta['trials']} trials)"
            horizon = f"; published T = {info['horizon']}" if info.get("horizon") else ""
            blocks.append({"title": f"{ref} — {info['source']}", "where": where + horizon,
                           "metric": info["metric"] if numbers else "", "numbers": numbers,
                           "claims": claims, "extras": rep.extras.get(ref, [])})
        own = [c for c in rep.claims if c.paper == paper and not c.covers]
        covering = [c for c in rep.claims if c.paper == paper and c.covers]
        if blocks or own or covering:
            out.append({"paper": paper, "title": PAPERS.get(paper, paper), "blocks": blocks,
                        "claims": own, "covering": covering})
    return out


def number_rows(numbers: list[NumberResult]) -> list[list[str]]:
    return [[r.label, r.grid or "—", _num(r.published), _ours(r), r.rule,
             _verdict(r.status, r.reason)] for r in numbers]


NUMBER_HEADER = ["algorithm", "setting", "published", "ours (mean ± s.e.)", "agreement rule",
                 "verdict"]
PCLAIM_HEADER = ["claim", "published", "ours", "checked by", "verdict"]
CLAIM_HEADER = ["claim", "source", "experiment", "test", "measured", "verdict"]


def pclaim_rows(claims: list[PublishedClaimResult]) -> list[list[str]]:
    return [[r.text, r.published or "—", r.measured or "—", r.via or "—",
             _verdict(r.status, r.reason)] for r in claims]


def claim_rows(claims: list[ClaimResult]) -> list[list[str]]:
    return [[f"{c.text} (`{c.id}`)", c.source, c.experiment, c.test or "—", c.measured or "—",
             _verdict(c.status, c.reason)] for c in claims]


def render_markdown(rep: Reproduction) -> str:
    lines = [
        "# Reproduction report",
        "",
        f"**{rep.summary_line()}.**",
        "",
        "Every published number and claim of the three papers, our value with its uncertainty "
        "(mean ± standard error over trials), and a verdict: *reproduced* (within the stated "
        "agreement rule, or the claim's statistical test supports it), *differs* (with the "
        "reason) or *not run* (no results, or results at another scale, e.g. the smoke "
        "configuration). Agreement rules follow the specifications where they give one "
        "(glm spec §6.6); otherwise a number is reproduced when our mean is within 2 standard "
        "errors of it. Claims name their test; strict claims (A < B, grows, falls) need the "
        "test to establish them at the stated level, non-strict ones (A ≤ B, within a range) "
        "must not be contradicted by it.",
        "",
    ]
    for section in _sections(rep):
        lines += [f"## {section['title']}", ""]
        for block in section["blocks"]:
            metric = f"; metric: {block['metric']}" if block["metric"] else ""
            lines += [f"### {block['title']}", "", f"Measured by {block['where']}{metric}.", ""]
            if block["numbers"]:
                lines.append(_md_table(NUMBER_HEADER, number_rows(block["numbers"])))
            if block["extras"]:
                extra = "; ".join(
                    f"{e['label']}{' ' + e['grid'] if e['grid'] else ''}"
                    f"{' [' + e['accounting'] + ']' if e['accounting'] else ''}: "
                    f"{_num(e['mean'])} ± {_num(e['se'])}" for e in block["extras"])
                lines += [f"Also measured (no published value): {extra}.", ""]
            if block["claims"]:
                lines.append(_md_table(PCLAIM_HEADER, pclaim_rows(block["claims"])))
        if section["covering"]:
            lines += ["#### Tests behind the published claims above", "",
                      _md_table(CLAIM_HEADER, claim_rows(section["covering"]))]
        if section["claims"]:
            lines += ["### Further claims of the paper text", "",
                      _md_table(CLAIM_HEADER, claim_rows(section["claims"]))]
    return "\n".join(lines).rstrip() + "\n"


_STYLE = """
body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.4}
table{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:0.9em;width:100%}
th,td{border:1px solid #ccc;padding:4px 6px;vertical-align:top;text-align:left}
th{background:#f3f3f3}.reproduced{color:#1a7f37}.differs{color:#b3261e}
.not-run{color:#6b6b6b}.summary{font-size:1.2em;font-weight:bold}
code{background:#f5f5f5;padding:0 3px}
"""


def _html_table(header: list[str], rows: list[list[str]], statuses: list[str]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = []
    for row, status in zip(rows, statuses, strict=True):
        cells = [html.escape(str(c)) for c in row[:-1]]
        verdict = str(row[-1]).replace("**", "")
        word, _, reason = verdict.partition(": ")
        cls = status.replace(" ", "-")
        cells.append(f'<strong class="{cls}">{html.escape(word)}</strong>'
                     + (f": {html.escape(reason)}" if reason else ""))
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def render_html(rep: Reproduction) -> str:
    """A self-contained HTML page with the same content as the Markdown report."""
    c = rep.counts()
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>Reproduction report: {html.escape(rep.summary_line())}</title>",
        f"<style>{_STYLE}</style></head><body><h1>Reproduction report</h1>",
        f"<p class='summary'><span class='reproduced'>{c['reproduced']} reproduced</span>, "
        f"<span class='differs'>{c['differs']} differ</span>, "
        f"<span class='not-run'>{c['not run']} not run</span></p>",
        "<p>Every published number and claim of the three papers next to ours (mean ± standard "
        "error over trials) with a verdict; agreement rules and tests as in "
        "<code>paper/claims.yaml</code>.</p>",
    ]
    for section in _sections(rep):
        parts.append(f"<h2>{html.escape(section['title'])}</h2>")
        for block in section["blocks"]:
            metric = f"; metric: {block['metric']}" if block["metric"] else ""
            parts.append(f"<h3>{html.escape(block['title'])}</h3><p>Measured by "
                         f"{html.escape(block['where'].replace('`', '') + metric)}.</p>")
            if block["numbers"]:
                parts.append(_html_table(NUMBER_HEADER, number_rows(block["numbers"]),
                                         [r.status for r in block["numbers"]]))
            if block["extras"]:
                items = "".join(
                    f"<li>{html.escape(e['label'])} {html.escape(e['grid'])}: "
                    f"{_num(e['mean'])} ± {_num(e['se'])}</li>" for e in block["extras"])
                parts.append(f"<p>Also measured (no published value):</p><ul>{items}</ul>")
            if block["claims"]:
                parts.append(_html_table(PCLAIM_HEADER, pclaim_rows(block["claims"]),
                                         [r.status for r in block["claims"]]))
        for key, title in (("covering", "Tests behind the published claims above"),
                           ("claims", "Further claims of the paper text")):
            if section[key]:
                parts.append(f"<h3>{title}</h3>")
                parts.append(_html_table(CLAIM_HEADER, claim_rows(section[key]),
                                         [r.status for r in section[key]]))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_report(rep: Reproduction, md: str | Path, html_path: str | Path,
                 json_path: str | Path) -> None:
    """Write the Markdown, HTML and JSON renderings (each atomically)."""
    for path, text in ((md, render_markdown(rep)), (html_path, render_html(rep)),
                       (json_path, json.dumps(_finite(rep.as_dict()), indent=1,
                                              default=_json_default))):
        write_text_atomic(path, text)


def _finite(value: Any) -> Any:
    """NaN/inf → None, recursively (strict JSON)."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, float | np.floating) and not math.isfinite(float(value)):
        return None
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, np.integer | np.floating):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def summary_line_of(json_path: str | Path) -> str | None:
    """The summary line of a written report, or None when there is none."""
    path = Path(json_path)
    if not path.is_file():
        return None
    return json.loads(path.read_text()).get("summary_line")
