"""Every verdict of the reproduction report: each published number (dpbandits.paper.compare),
each published claim and item, and each claim of paper/claims.yaml (dpbandits.paper.claims)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from dpbandits.data.provenance import data_note
from dpbandits.errors import ConfigError
from dpbandits.paper.claims import STATUSES, ClaimResult, evaluate_claim
from dpbandits.paper.compare import (
    DEFAULT_RULE,
    NumberResult,
    agreement_rule,
    also_measured,
    comparability,
    compare_number,
)
from dpbandits.paper.earlier import compare_earlier
from dpbandits.paper.published import (
    covers_item,
    experiment_for,
    paper_of,
    published_claims,
    published_items,
    published_numbers,
)
from dpbandits.paper.results import NotComparable, Results
from dpbandits.paper.verdict import DIFFERS, INCONCLUSIVE, INCONSISTENT, REPRODUCED


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
    earlier: list[dict[str, Any]] = field(default_factory=list)  # dpbandits.paper.earlier

    def verdict_rows(self, paper: str | None = None) -> list[Any]:
        """Rows counted in the headline, each test once: the published numbers, the counted
        claims of paper/claims.yaml, and the published claims and items no test covers."""
        tested = [c for c in self.claims if c.counted]
        untested = [r for r in self.published_claims if not r.via.startswith(TESTED_VIA)]
        rows = [*self.numbers, *tested, *untested]
        return [r for r in rows if paper is None or r.paper == paper]

    def not_counted(self) -> list[ClaimResult]:
        """Claims shown but not counted: arithmetic, or no published counterpart."""
        return [c for c in self.claims if not c.counted]

    def counts(self, paper: str | None = None) -> dict[str, int]:
        """Number of counted rows per status (of one paper, or of all)."""
        counts = dict.fromkeys(STATUSES, 0)
        for row in self.verdict_rows(paper):
            counts[row.status] += 1
        return counts

    def summary_line(self, paper: str | None = None) -> str:
        """"<n> reproduced, <n> differ, <n> inconclusive, …" over distinct tests."""
        c = self.counts(paper)
        words = {"differs": "differ"}
        return ", ".join(f"{c[s]} {words.get(s, s)}" for s in STATUSES)

    def decisive_trials(self, cap: int) -> dict[str, int]:
        """Per experiment, the trials that would decide its inconclusive rows at the observed
        spread (the most any of them needs, up to `cap`; config/examples/decisive_trials.yaml)."""
        out: dict[str, int] = {}
        for row in self.verdict_rows():
            needed = getattr(row, "trials_needed", None)
            if row.status == INCONCLUSIVE and needed and needed <= cap and row.experiment:
                out[row.experiment] = max(out.get(row.experiment, 0), needed)
        return dict(sorted(out.items()))

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (paper/reproduction.json)."""
        return {
            "summary": self.counts(),
            "summary_line": self.summary_line(),
            "papers": {p: self.counts(p) for p in sorted({r.paper for r in self.verdict_rows()})},
            "not_counted": [c.id for c in self.not_counted()],
            "numbers": [asdict(r) for r in self.numbers],
            "published_claims": [asdict(r) for r in self.published_claims],
            "claims": [c.as_dict() for c in self.claims],
            "extras": self.extras,
            "experiments": self.experiments,
            "earlier": self.earlier,
        }


# ---------------------------------------------------------------------------------------------
# Published claims: our tested claims that cover them, else the experiment's claims table


VERDICT_WORDS = {"reproduced": "reproduced", "supported": "reproduced", "holds": "reproduced",
                 "true": "reproduced", "yes": "reproduced", "differs": "differs",
                 "not supported": "differs", "false": "differs", "no": "differs"}


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


TESTED_VIA = "tested by "
PRECEDENCE = (DIFFERS, INCONSISTENT, INCONCLUSIVE, "not comparable", "not run", REPRODUCED)


def _combine(results: list[ClaimResult]) -> tuple[str, str, str, str]:
    """Verdict of a published claim from the tests covering it; the details stay with the
    tests, the row names them."""
    statuses = {r.status for r in results}
    status = next(s for s in PRECEDENCE if s in statuses)
    chosen = [r for r in results if r.status == status] or results
    reason = "see " + ", ".join(f"`{r.id}`" for r in chosen) + " below"
    return status, reason, "", ""


def check_published_claim(ref: str, entry: dict[str, Any], key: str, claim: dict[str, Any],
                          experiment: str | None, summary: pd.DataFrame | None,
                          table: pd.DataFrame | None, claim_results: list[ClaimResult],
                          paper: str) -> PublishedClaimResult:
    """Verdict of a published claim: from the claims.yaml tests that cover it, else from the
    experiment's claims table `table` (results at another horizon: not comparable)."""
    family, entry_key = ref.split(":", 1)
    base = PublishedClaimResult(
        paper=paper, family=family, entry=entry_key, key=key,
        text=str(claim.get("text", key)).strip(), published=str(claim.get("published", "")),
        experiment=experiment or "", status="not run", reason="")
    cover = [r for r in claim_results if f"{ref}#{key}" in r.covers]
    if cover:
        status, reason, measured, test = _combine(cover)
        base.status, base.reason, base.measured, base.test = status, reason, measured, test
        base.via = TESTED_VIA + ", ".join(r.id for r in cover)
        return base
    if experiment is None:
        base.reason = "no experiment in the configuration measures this entry"
        return base
    if summary is None:
        base.reason = f"no results yet (results/{experiment}/summary.csv)"
        return base
    found = _table_verdict(table, key, claim) if table is not None else None
    if found is None:
        base.reason = "no check of this claim in paper/claims.yaml or the experiment's claims table"
        return base
    status, measured = found
    base.measured, base.via = measured, f"{experiment} claims table (direction check, no test)"
    scale = comparability(summary, entry.get("horizon", claim.get("horizon")))
    if scale:
        base.status, base.reason = "not comparable", scale
        return base
    base.status = status
    base.reason = {"reproduced": "direction holds", "differs": "direction does not hold"}.get(
        status, "the claims table has no verdict")
    return base


def item_label(entry: dict[str, Any], path: str) -> str:
    """Plain-language label of a published item: the entry's `labels` for its path, else the
    path's keys in words."""
    labels = entry.get("labels") or {}
    if path in labels:
        return " ".join(str(labels[path]).split())
    return ", ".join(part.replace("_", " ") for part in path.split("/"))


def check_published_item(ref: str, path: str, value: str, experiment: str | None,
                         claim_results: list[ClaimResult], paper: str,
                         label: str = "") -> PublishedClaimResult:
    """Verdict of a published number outside `values`: from the claims.yaml tests covering it."""
    family, entry_key = ref.split(":", 1)
    base = PublishedClaimResult(
        paper=paper, family=family, entry=entry_key, key=f"@{path}",
        text=label or path, published=value, experiment=experiment or "",
        status="not run", reason="")
    cover = [r for r in claim_results if any(covers_item(c, ref, path) for c in r.covers)]
    if not cover:
        base.reason = ("no comparison is defined for this published number (a claim in "
                       "paper/claims.yaml can cover it)")
        return base
    status, reason, measured, test = _combine(cover)
    base.status, base.reason, base.measured, base.test = status, reason, measured, test
    base.via = TESTED_VIA + ", ".join(r.id for r in cover)
    return base


# ---------------------------------------------------------------------------------------------
# The report


def build(config: dict[str, Any], summaries: Mapping[str, pd.DataFrame | None],
          claim_tables: Mapping[str, pd.DataFrame], published: Mapping[str, dict[str, Any]],
          claims_file: dict[str, Any],
          earlier: list[dict[str, Any]] | None = None) -> Reproduction:
    """Every verdict of the report from the configuration, our summaries and claims tables
    (dpbandits.paper.results), the published entries and paper/claims.yaml (.published)."""
    rules = claims_file.get("agreement") or []
    default = claims_file.get("default_agreement") or DEFAULT_RULE
    results = Results(config["experiments"], dict(summaries))
    horizons = claims_file.get("paper_horizons") or {}
    rep = Reproduction()
    rep.earlier = compare_earlier(earlier or [], summaries)
    rep.claims = [evaluate_claim(c, results) for c in claims_file["claims"]]
    for name, summary in summaries.items():
        exp = config["experiments"][name]
        rep.experiments[name] = {
            "paper": exp.get("paper", ""), "group": exp.get("group", "synthetic"),
            "description": exp.get("description", ""),
            "T": None if summary is None else int(summary["T"].max()),
            "trials": None if summary is None else int(summary["seed"].nunique()),
        }
    for ref, entry in published.items():
        experiment = experiment_for(ref, entry, config)
        summary = summaries.get(experiment) if experiment else None
        paper = paper_of(ref, experiment, config)
        if entry.get("horizon") is None and experiment in horizons:
            entry = {**entry, "horizon": horizons[experiment]}
        note = data_note(summary) if summary is not None else None
        source = f"{entry.get('source', '')} — {note}" if note else entry.get("source", "")
        rep.entries[ref] = {"source": source, "experiment": experiment,
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
            table = claim_tables.get(experiment) if experiment else None
            rep.published_claims.append(check_published_claim(
                ref, entry, key, claim, experiment, summary, table, rep.claims, paper))
        for path, value in published_items(entry):
            rep.published_claims.append(check_published_item(
                ref, path, value, experiment, rep.claims, paper, item_label(entry, path)))
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
