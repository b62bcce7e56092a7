"""What the papers published and what we claim about them: paper/published/*.yaml (format in
paper/published/README.md) and paper/claims.yaml (format in its header), read from the files
the caller names and checked."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dpbandits.errors import ConfigError

ALPHA = 0.05
"""Default level of a claim's test."""
FAMILY_PAPER = {"realdata": "ts"}
METADATA_KEYS = {
    "source", "summary", "note", "notes", "text", "description", "instance", "x_axis", "y_axis",
    "column", "horizon", "approximate", "experiment", "metric", "reference", "where", "pick",
    "agreement", "labels", "K", "d", "T", "trials", "seeds", "delta", "epsilon_user", "values",
    "claims",
}
TEXT_KEYS = {"source", "summary", "note", "notes", "text", "description"}


# ---------------------------------------------------------------------------------------------
# paper/published/*.yaml


@dataclass(frozen=True)
class PublishedEntry:
    """One entry of a published-results file and its reference `<family>:<entry>`."""

    ref: str
    data: dict[str, Any]

    @property
    def source(self) -> Any:
        """Where in the paper the entry comes from (its reference when it names none)."""
        return self.data.get("source", self.ref)


def load_published(paths: Iterable[str | Path]) -> dict[str, dict[str, Any]]:
    """`<family>:<entry>` → entry mapping of the given paper/published/<family>.yaml files."""
    out = {}
    for path in sorted(Path(p) for p in paths):
        data = yaml.safe_load(path.read_text()) or {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path} must be a mapping of entries")
        for key, entry in data.items():
            if not isinstance(entry, dict):
                raise ConfigError(f"{path}: entry {key!r} must be a mapping")
            out[f"{path.stem}:{key}"] = entry
    return out


def published_entry(published: Mapping[str, dict[str, Any]], ref: str) -> PublishedEntry:
    """The entry an output names (`published: "<family>:<entry>"`)."""
    if ref not in published:
        raise ConfigError(f"published {ref!r} is not an entry of the published-results files "
                          f"given; allowed: {', '.join(sorted(published)) or 'none'}")
    return PublishedEntry(ref, published[ref])


def published_files(refs: Iterable[str], folder: str | Path) -> list[str]:
    """The files of `folder` (paper/published) that hold the given references."""
    return sorted({str(Path(folder) / f"{ref.split(':', 1)[0]}.yaml") for ref in refs})


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


def paper_of(ref: str, experiment: str | None, config: dict[str, Any]) -> str:
    """The paper a published entry belongs to: its experiment's, else its family's."""
    if experiment and experiment in config["experiments"]:
        return config["experiments"][experiment].get("paper", "")
    family = ref.split(":", 1)[0]
    return FAMILY_PAPER.get(family, family)


# ---------------------------------------------------------------------------------------------
# paper/claims.yaml


REQUIRED = ("id", "paper", "text", "experiment", "horizon", "comparison")
SELECTOR_KEYS = {
    "less": ("a", "b"), "greater": ("a", "b"), "at_most": ("a", "b"), "at_least": ("a", "b"),
    "best": ("a", "others"), "ordering": ("chain",), "increasing": ("select", "over"),
    "decreasing": ("select", "over"), "ratio_at_most": ("a", "b", "threshold"),
    "ratio_at_least": ("a", "b", "threshold"), "ratio_between": ("a", "b", "low", "high"),
    "between": ("select", "low", "high"), "stable": ("select", "over", "threshold"),
    "difference_between": ("a", "b", "low", "high"), "more_variable": ("a", "b"),
    "within_band": ("select", "over", "half_width"),
    "all_at_most": ("select", "threshold"), "rate_between": ("a", "b", "over", "low", "high"),
}
TESTS = ("auto", "paired_t", "welch_t")


def validate_claim(claim: Any, index: int) -> dict[str, Any]:
    """One claim entry, checked: ConfigError naming the bad key and what is allowed."""
    where = f"paper/claims.yaml claims[{index}]"
    if not isinstance(claim, dict):
        raise ConfigError(f"{where} must be a mapping with keys {', '.join(REQUIRED)}")
    for key in REQUIRED:
        if key not in claim:
            raise ConfigError(f"{where} ({claim.get('id', '?')}) lacks {key!r}; required: "
                              f"{', '.join(REQUIRED)}")
    comp = claim["comparison"]
    kind = comp.get("kind") if isinstance(comp, dict) else None
    if kind not in SELECTOR_KEYS:
        raise ConfigError(f"{where} ({claim['id']}) comparison kind {kind!r} is not allowed; "
                          f"allowed: {', '.join(SELECTOR_KEYS)}")
    for key in SELECTOR_KEYS[kind]:
        if key not in comp:
            raise ConfigError(f"{where} ({claim['id']}) comparison {kind} lacks {key!r}")
    test = claim.get("test", "auto")
    if test not in TESTS:
        raise ConfigError(f"{where} ({claim['id']}) test {test!r} is not allowed; allowed: "
                          f"{', '.join(TESTS)}")
    alpha = claim.get("alpha", ALPHA)
    if not isinstance(alpha, int | float) or not 0 < alpha < 0.5:
        raise ConfigError(f"{where} ({claim['id']}) alpha {alpha!r} is not allowed; allowed: "
                          "0 < alpha < 0.5")
    return claim


def load_claims_file(path: str | Path) -> dict[str, Any]:
    """paper/claims.yaml: `claims` (list) and `agreement` rules, validated."""
    with open(path) as handle:
        data = yaml.safe_load(handle) or {}
    claims = [validate_claim(c, i) for i, c in enumerate(data.get("claims", []))]
    ids = [c["id"] for c in claims]
    duplicate = {i for i in ids if ids.count(i) > 1}
    if duplicate:
        raise ConfigError(f"paper/claims.yaml claim ids must be unique; repeated: "
                          f"{', '.join(sorted(duplicate))}")
    return {**data, "claims": claims}
