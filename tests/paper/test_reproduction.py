"""Every verdict of the reproduction report: numbers, published claims and items, claims."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from dpbandits.errors import ConfigError
from dpbandits.paper.compare import NumberResult
from dpbandits.paper.published import published_items
from dpbandits.paper.reproduction import Reproduction, item_label
from dpbandits.paper.verdict import plain

from conftest import REPO, SMOKE_PAPER
from paper_helpers import build_project, build_toy, write_project

VERDICT = re.compile(r"\*\*(reproduced|differs|inconclusive|paper inconsistent|not comparable|"
                     r"not run)\*\*")
SETTING_KEYS = {"source", "summary", "note", "notes", "text", "description", "instance",
                "x_axis", "y_axis", "column", "horizon", "approximate", "experiment", "metric",
                "reference", "where", "pick", "agreement", "K", "d", "T", "trials", "seeds",
                "delta", "epsilon_user", "values", "claims", "labels"}



def by_label(rep) -> dict:
    return {(r.entry, r.label, r.grid): r for r in rep.numbers}


def test_number_verdicts(tmp_path):
    rep = build_toy(tmp_path)
    rows = by_label(rep)
    assert rows[("tab", "Base", "S=2")].status == "reproduced"
    assert rows[("tab", "Base", "S=2")].rule == "±10 %"
    assert "lies inside [90, 110]" in rows[("tab", "Base", "S=2")].reason
    off = rows[("tab", "Priv ε=4", "S=3")]
    assert off.status == "differs"
    assert re.match(r"90 % interval 4\d\d\.?\d* to 4\d\d\.?\d* lies outside \[810, 990\] "
                    r"\(0\.\d+× published\)", off.reason)
    assert off.explanation == "known deviation" and off.rule == "±10 % (docs/reproduction.md)"
    assert rows[("tab", "Priv ε=4", "S=2")].status == "reproduced"
    gone = rows[("tab", "Gone", "S=2")]
    assert gone.status == "not run" and "no results for Gone" in gone.reason
    assert rows[("other", "Base", "")].status == "not run"  # no experiment measures it
    ours = rows[("tab", "Base", "S=3")]
    assert ours.n == 10 and ours.mean == pytest.approx(150, abs=5) and ours.se < 3


def test_published_claims_and_items(tmp_path):
    rep = build_toy(tmp_path)
    claims = {r.key: r for r in rep.published_claims}
    assert claims["c"].status == "reproduced" and "base_below_priv" in claims["c"].via
    assert claims["2"].status == "not run" and "no check" in claims["2"].reason
    assert claims["@rows/1/np"].status == "reproduced" and "row_np" in claims["@rows/1/np"].via
    assert claims["c"].reason == "see `base_below_priv` below"


def test_the_headline_counts_each_test_once(tmp_path):
    config = write_project(tmp_path)
    claims = yaml.safe_load((tmp_path / "claims.yaml").read_text())
    # one test deciding two published claims, and one arithmetic check
    claims["claims"][0]["covers"] = ["fam:tab#c", "fam:tab#2"]
    claims["claims"][2].update(counted=False, not_counted="arithmetic")
    (tmp_path / "claims.yaml").write_text(yaml.safe_dump(claims, allow_unicode=True))
    rep = build_project(tmp_path, config)
    counts = rep.counts()
    # 6 numbers + 2 counted tests; the published claims and item are decided by those tests
    assert sum(counts.values()) == len(rep.numbers) + 2 == 8
    ids = [r.id for r in rep.verdict_rows() if hasattr(r, "id")]
    assert sorted(ids) == ["base_below_priv", "row_np"]
    assert [c.id for c in rep.not_counted()] == ["extra_low"]
    assert rep.summary_line() == (f"{counts['reproduced']} reproduced, {counts['differs']} "
                                  f"differ, {counts['inconclusive']} inconclusive, "
                                  f"{counts['paper inconsistent']} paper inconsistent, "
                                  f"{counts['not comparable']} not comparable, "
                                  f"{counts['not run']} not run")
    # negative control: the same report with every covered claim counted as well
    assert len(rep.numbers) + len(rep.published_claims) + len(rep.claims) > sum(counts.values())


def test_results_at_another_horizon_are_not_comparable(tmp_path):
    rep = build_toy(tmp_path, horizon=300, published_horizon=5000)
    assert {r.status for r in rep.numbers if r.entry == "tab"} == {"not comparable"}
    assert by_label(rep)[("other", "Base", "")].status == "not run"  # no experiment measures it
    base = by_label(rep)[("tab", "Base", "S=2")]
    assert "smoke scale" in base.reason and "T = 300" in base.reason
    assert "from published" not in base.reason  # no difference at another scale
    assert base.mean is not None  # still shown
    assert {c.status for c in rep.claims} == {"not comparable"}
    assert rep.counts()["reproduced"] == rep.counts()["differs"] == 0


def test_missing_results_are_not_run_and_unanswerable_ones_not_comparable(tmp_path):
    rep = build_toy(tmp_path)
    gone = by_label(rep)[("tab", "Gone", "S=2")]
    assert gone.status == "not run" and not gone.reason.startswith("not comparable")
    (tmp_path / "one").mkdir()
    config = write_project(tmp_path / "one")
    path = tmp_path / "one" / "results" / "toy" / "summary.csv"
    pd.read_csv(path).query("seed == 0").to_csv(path, index=False)
    base = by_label(build_project(tmp_path / "one", config))[("tab", "Base", "S=2")]
    assert base.status == "not comparable" and "one trial" in base.reason


def with_data(root: Path, sha256: str, pinned: bool, fit: str = "prefix10") -> None:
    """Give the toy results the provenance columns of real data (docs/realdata.md)."""
    path = root / "results" / "toy" / "summary.csv"
    summary = pd.read_csv(path).assign(
        data_archives="ml-25m.zip", data_sha256=sha256, data_pinned=pinned, features_fit=fit,
        features_leak_free=fit != "whole", feature_auc=0.5)
    summary.to_csv(path, index=False)


def test_results_from_an_archive_that_is_not_pinned_are_not_comparable(tmp_path):
    config = write_project(tmp_path)
    with_data(tmp_path, "ab" * 32, pinned=False)
    rep = build_project(tmp_path, config)
    rows = [*[n for n in rep.numbers if n.experiment == "toy" and n.label != "Gone"],
            *rep.claims, *[c for c in rep.published_claims if c.via]]
    assert rows and {r.status for r in rows} == {"not comparable"}
    for row in [r for r in rows if not r.reason.startswith("see ")]:
        assert "not comparable: made from ml-25m.zip (sha256 abababababab…)" in row.reason
    assert "NOT the pinned release" in rep.entries["fam:tab"]["source"]
    assert by_label(rep)[("tab", "Base", "S=2")].mean is not None  # still shown


def test_pinned_real_data_keeps_its_verdicts_and_names_its_features(tmp_path):
    config = write_project(tmp_path)
    with_data(tmp_path, "cd" * 32, pinned=True)
    rep = build_project(tmp_path, config)
    assert by_label(rep)[("tab", "Base", "S=2")].status == "reproduced"
    source = rep.entries["fam:tab"]["source"]
    assert source.startswith("Table 9 — data ml-25m.zip (sha256 cdcdcdcdcdcd…), the pinned")
    assert "earliest 10 % of events only (leak-free)" in source and "AUC" in source


def test_covers_must_name_a_published_item(tmp_path):
    config = write_project(tmp_path)
    claims = yaml.safe_load((tmp_path / "claims.yaml").read_text())
    claims["claims"][0]["covers"] = "fam:tab#nope"
    (tmp_path / "claims.yaml").write_text(yaml.safe_dump(claims, allow_unicode=True))
    with pytest.raises(ConfigError, match="covers fam:tab#nope"):
        build_project(tmp_path, config)


def test_published_claims_fall_back_on_the_claims_table(tmp_path):
    config = write_project(tmp_path)
    config["experiments"]["toy"]["outputs"].append({"kind": "linear_claims",
                                                    "published": "fam:tab"})
    (tmp_path / "paper" / "tables").mkdir(parents=True)
    pd.DataFrame({"claim": ["2"], "measured": ["x < y"], "verdict": ["not supported"]}).to_csv(
        tmp_path / "paper" / "tables" / "toy_claims.csv", index=False)
    claims = {r.key: r for r in build_project(tmp_path, config).published_claims}
    assert claims["2"].status == "differs" and claims["2"].measured == "x < y"
    assert claims["2"].via == "toy claims table (direction check, no test)"


def published_entries() -> list[tuple[str, str, dict]]:
    out = []
    for path in sorted((REPO / "paper" / "published").glob("*.yaml")):
        for key, entry in (yaml.safe_load(path.read_text()) or {}).items():
            out.append((path.stem, key, entry))
    return out


def other_numbers(node, path=()):
    """Numbers outside values/claims (walked independently of dpbandits.paper.published)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if (not path and k in SETTING_KEYS) or k in {"source", "summary", "note", "notes",
                                                         "text", "description"}:
                continue
            yield from other_numbers(v, (*path, str(k)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from other_numbers(v, (*path, str(i)))
    elif isinstance(node, int | float) and not isinstance(node, bool):
        yield path, node
    elif isinstance(node, str) and re.search(r"\d", node) and len(node) <= 40:
        yield path, node


def md_rows(md: str) -> list[str]:
    return [line for line in md.splitlines() if line.startswith("| ")]


def test_every_published_number_and_claim_has_a_verdict(smoke_run: Path):
    md = (smoke_run / SMOKE_PAPER / "reproduction.md").read_text()
    rows = md_rows(md)
    missing = []
    for family, key, entry in published_entries():
        for label, cells in (entry.get("values") or {}).items():
            cells = cells if isinstance(cells, dict) else {None: cells}
            for grid, value in cells.items():
                cell = "—" if grid is None else f"{entry['column']} = {float(grid):g}"
                hits = [r for r in rows if r.startswith(f"| {label} | {cell} | {plain(value)} |")
                        and VERDICT.search(r)]
                if len(hits) != 1:
                    missing.append(f"{family}:{key} {label} {cell} = {value}")
        for claim in entry.get("claims") or []:
            text = " ".join(str(claim.get("text", claim.get("id"))).split())
            if not [r for r in rows if r.startswith(f"| {text.replace('|', chr(92) + '|')} |")
                    and VERDICT.search(r)]:
                missing.append(f"{family}:{key} claim {text!r}")
        for path, value in other_numbers(entry):
            text = entry["labels"]["/".join(path)]
            if not [r for r in rows if r.startswith(f"| {text} | {value:g} |"
                                                    if not isinstance(value, str)
                                                    else f"| {text} | {value} |")
                    and VERDICT.search(r)]:
                missing.append(f"{family}:{key} {text} = {value}")
    assert missing == []
    # plain-language labels: no raw YAML path, no internal selector key
    assert " › " not in md and "grid_of" not in md and "p_values" not in md


def test_decisive_trials_take_the_most_any_inconclusive_row_needs_up_to_the_cap():
    def row(experiment: str, status: str, needed: int | None) -> NumberResult:
        return NumberResult(paper="glm", family="f", entry="e", source="", experiment=experiment,
                            label="X", column="", grid="", published=1.0, status=status,
                            reason="", trials_needed=needed)

    rep = Reproduction(numbers=[row("a", "inconclusive", 30), row("a", "inconclusive", 80),
                                row("a", "inconclusive", 5000), row("b", "inconclusive", None),
                                row("c", "reproduced", None), row("d", "inconclusive", 12)])
    assert rep.decisive_trials(200) == {"a": 80, "d": 12}
    assert rep.decisive_trials(10_000) == {"a": 5000, "d": 12}


def test_the_decisive_trials_overlay_raises_only_trials():
    overlay = yaml.safe_load((REPO / "config" / "examples" / "decisive_trials.yaml").read_text())
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["experiments"]
    assert overlay["results"] != "results" and overlay["experiments"]
    for name, change in overlay["experiments"].items():
        assert set(change) == {"trials"} and change["trials"] > base[name]["trials"], name


def test_every_published_item_has_a_plain_language_label():
    unlabelled = [f"{family}:{key} {path}" for family, key, entry in published_entries()
                  for path, _ in published_items(entry)
                  if path not in (entry.get("labels") or {})]
    assert unlabelled == []
    # negative control: an item without a label falls back on its keys in words, not its path
    assert item_label({}, "rows/5/np") == "rows, 5, np"
    assert item_label({"labels": {"rows/5/np": "NP% at k = 5"}}, "rows/5/np") == "NP% at k = 5"
