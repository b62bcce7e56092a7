"""Reproduction report: agreement rules, verdicts, published items, renderings, Snakemake run."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dpbandits.config import REPO_ROOT, load_config
from dpbandits.errors import ConfigError
from dpbandits.report import (
    DEFAULT_RULE,
    agreement_rule,
    apply_rule,
    build,
    experiment_for,
    label_parts,
    load_published_dir,
    published_items,
    render_html,
    render_markdown,
    write_report,
)

from conftest import run_snakemake

SEED = 4242


def test_label_parts():
    assert label_parts("Private-GLM ε=4") == ("Private-GLM", 4.0)
    assert label_parts("Local DP ε0=0.1") == ("Local DP", 0.1)
    assert label_parts("RS-GLinUCB (T2)") == ("RS-GLinUCB (T2)", None)


@pytest.mark.parametrize(
    "rule,mean,se,n,published,agrees",
    [
        ({"kind": "relative", "tolerance": 0.05}, 104.9, 1.0, 10, 100.0, True),
        ({"kind": "relative", "tolerance": 0.05}, 105.1, 1.0, 10, 100.0, False),
        ({"kind": "relative", "tolerance": 0.05}, 95.1, 1.0, 10, 100.0, True),
        ({"kind": "factor", "tolerance": 2.5}, 249.0, 1.0, 10, 100.0, True),
        ({"kind": "factor", "tolerance": 2.5}, 39.0, 1.0, 10, 100.0, False),
        ({"kind": "standard_errors", "tolerance": 2.0}, 103.9, 2.0, 10, 100.0, True),
        ({"kind": "standard_errors", "tolerance": 2.0}, 104.1, 2.0, 10, 100.0, False),
        ({"kind": "absolute", "tolerance": 0.5}, 1.4, 0.1, 3, 1.0, True),
    ],
)
def test_apply_rule_boundaries(rule, mean, se, n, published, agrees):
    assert apply_rule(rule, mean, se, n, published)[0] is agrees


def test_standard_error_rule_needs_two_trials():
    assert apply_rule(DEFAULT_RULE, 5.0, 0.0, 1, 5.0)[0] is None


def test_repository_agreement_rules_follow_the_glm_spec():
    rules = yaml.safe_load((REPO_ROOT / "paper" / "claims.yaml").read_text())["agreement"]
    published = load_published_dir(REPO_ROOT / "paper" / "published")

    def rule(ref: str, label: str) -> tuple[str, float]:
        r = agreement_rule(ref, label, published.get(ref, {}), rules, DEFAULT_RULE)
        return r["kind"], r["tolerance"]

    assert rule("glm:table2", "GLM-UCB") == ("relative", 0.05)
    assert rule("glm:table2", "GLOC") == ("relative", 0.05)
    assert rule("glm:table2", "Private-GLM ε=6") == ("relative", 0.10)
    assert rule("glm:table2", "RS-GLinUCB (T2)") == ("factor", 2.5)
    assert rule("glm:fig1_logistic", "ECOLog") == ("relative", 0.15)
    assert rule("glm:fig1_probit", "Private-GLM ε=2") == ("relative", 0.15)
    assert rule("unknown:entry", "X") == ("standard_errors", 2)


def test_bad_agreement_rule_is_one_line():
    with pytest.raises(ConfigError, match="kind 'percent' is not allowed"):
        agreement_rule("a:b", "X", {}, [{"published": "a:b", "rule": {"kind": "percent",
                                                                     "tolerance": 1}}],
                       DEFAULT_RULE)


def test_published_items_skip_settings_and_text():
    entry = {"source": "Sec. 5", "horizon": 10000, "summary": "k = 1: 80.4%",
             "values": {"A": {1: 2.0}}, "claims": [{"text": "x"}],
             "rows": {1: {"rho": 0.45, "np": 80.4}}, "p_values": {"TS − UCB": {1: {"p": "<0.01"}}},
             "sigma": {"note": "σ_amp < σ_base", "alpha_star": {1: 16}}}
    assert published_items(entry) == [("rows/1/rho", "0.45"), ("rows/1/np", "80.4"),
                                      ("p_values/TS − UCB/1/p", "<0.01"),
                                      ("sigma/alpha_star/1", "16")]


# --------------------------------------------------------------------------- a small project


def write_project(root: Path, horizon: int = 1000, published_horizon: int = 1000) -> dict:
    """Config, results, published file and claims file of one toy experiment."""
    rng = np.random.default_rng(SEED)
    rows = []
    for algorithm, eps, center in (("Base", None, 100.0), ("Priv", 4.0, 300.0),
                                   ("Extra", None, 50.0)):
        for s_index, s in enumerate((2.0, 3.0)):
            for seed in range(10):
                rows.append({"experiment": "toy", "algorithm": algorithm, "policy": algorithm,
                             "accounting": "paper", "epsilon": np.nan if eps is None else eps,
                             "instance_index": s_index, "S": s, "T": horizon, "seed": seed,
                             "regret": center * s / 2 + rng.normal(0, 5), "mean_reward": 0.5,
                             "kappa": 10 * s})
    (root / "results" / "toy").mkdir(parents=True)
    pd.DataFrame(rows).to_csv(root / "results" / "toy" / "summary.csv", index=False)
    (root / "published").mkdir()
    (root / "published" / "fam.yaml").write_text(yaml.safe_dump({
        "tab": {"source": "Table 9", "column": "S", "horizon": published_horizon,
                "values": {"Base": {2.0: 100.0, 3.0: 150.0},   # matches ours
                           "Priv ε=4": {2.0: 300.0, 3.0: 900.0},  # S = 3 is off by 2x
                           "Gone": {2.0: 1.0}},                   # never run
                "claims": [{"id": "c", "text": "Base below Priv"}, {"text": "uncovered claim"}],
                "rows": {1: {"np": 80.4}}},
        "other": {"source": "Figure 1", "horizon": 5, "values": {"Base": 1.0}},
    }, allow_unicode=True))
    (root / "claims.yaml").write_text(yaml.safe_dump({
        "agreement": [{"published": "fam:tab", "algorithms": ["Priv*"],
                       "rule": {"kind": "relative", "tolerance": 0.1}, "basis": "spec",
                       "note": "known deviation"}],
        "claims": [
            {"id": "base_below_priv", "paper": "glm", "text": "Base below Priv",
             "experiment": "toy", "horizon": published_horizon,
             "comparison": {"kind": "less", "a": {"algorithm": "Base"},
                            "b": {"algorithm": "Priv", "epsilon": 4}, "for_each": "S"},
             "covers": "fam:tab#c"},
            {"id": "row_np", "paper": "glm", "text": "the np row", "experiment": "toy",
             "horizon": published_horizon, "metric": "mean_reward",
             "comparison": {"kind": "between", "select": {"algorithm": "Base", "S": 2.0},
                            "low": 0.4, "high": 0.6},
             "covers": "fam:tab@rows/1"},
            {"id": "extra_low", "paper": "glm", "text": "Extra has the lowest regret",
             "experiment": "toy", "horizon": published_horizon,
             "comparison": {"kind": "less", "a": {"algorithm": "Extra", "S": 2.0},
                            "b": {"algorithm": "Base", "S": 2.0}}},
        ],
    }, allow_unicode=True))
    return {"results": "results", "paper": "paper", "experiments": {"toy": {
        "group": "synthetic", "paper": "glm", "instance_grid": {"S": [2.0, 3.0]},
        "outputs": [{"kind": "final_regret_table", "published": "fam:tab"}]}}}


def build_toy(root: Path, **kw):
    config = write_project(root, **kw)
    return build(config, root / "results", root / "paper", root / "published",
                 root / "claims.yaml")


def by_label(rep) -> dict:
    return {(r.entry, r.label, r.grid): r for r in rep.numbers}


def test_number_verdicts(tmp_path):
    rep = build_toy(tmp_path)
    rows = by_label(rep)
    assert rows[("tab", "Base", "S=2")].status == "reproduced"
    assert rows[("tab", "Base", "S=2")].rule == "±2 s.e."
    off = rows[("tab", "Priv ε=4", "S=3")]
    assert off.status == "differs"
    assert re.match(r"-(49|50)\.\d % from published; allowed ±10 %", off.reason)
    assert "known deviation" in off.reason and off.rule == "±10 % (spec)"
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
    counts = rep.counts()
    assert sum(counts.values()) == len(rep.numbers) + len(rep.published_claims) + 1
    assert rep.summary_line() == (f"{counts['reproduced']} reproduced, {counts['differs']} "
                                  f"differ, {counts['not run']} not run")


def test_results_at_another_horizon_are_not_comparable(tmp_path):
    rep = build_toy(tmp_path, horizon=300, published_horizon=5000)
    assert {r.status for r in rep.numbers} == {"not run"}
    base = by_label(rep)[("tab", "Base", "S=2")]
    assert "smoke scale" in base.reason and "T = 300" in base.reason
    assert base.mean is not None  # still shown
    assert {c.status for c in rep.claims} == {"not run"}


def test_covers_must_name_a_published_item(tmp_path):
    config = write_project(tmp_path)
    claims = yaml.safe_load((tmp_path / "claims.yaml").read_text())
    claims["claims"][0]["covers"] = "fam:tab#nope"
    (tmp_path / "claims.yaml").write_text(yaml.safe_dump(claims, allow_unicode=True))
    with pytest.raises(ConfigError, match="covers fam:tab#nope"):
        build(config, tmp_path / "results", tmp_path / "paper", tmp_path / "published",
              tmp_path / "claims.yaml")


def test_renderings_carry_every_row(tmp_path):
    rep = build_toy(tmp_path)
    md, page = render_markdown(rep), render_html(rep)
    assert rep.summary_line() in md
    for r in rep.numbers:
        assert r.label.replace("|", "\\|") in md and f"**{r.status}**" in md
    assert md.count("| ") > len(rep.numbers)
    assert page.count("<tr>") == md.count("\n| ")
    assert "class='reproduced'" in page and "base_below_priv" in md
    write_report(rep, tmp_path / "r.md", tmp_path / "r.html", tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["summary_line"] == rep.summary_line()
    assert all(v is None or math.isfinite(v) for r in data["numbers"] for v in (r["mean"],))


def test_experiment_for_prefers_explicit_then_outputs_then_names():
    config = {"experiments": {"glm_table2": {"outputs": []},
                              "x": {"outputs": [{"kind": "k", "published": "glm:table2"}]},
                              "ts_jester": {"outputs": []}}}
    assert experiment_for("glm:table2", {"experiment": "y"}, config) == "y"
    assert experiment_for("glm:table2", {}, config) == "x"
    assert experiment_for("realdata:ts_jester", {}, config) == "ts_jester"
    assert experiment_for("glm:fig1", {}, config) is None


# --------------------------------------------------------------------------- real Snakemake run


def test_smoke_run_writes_the_report(smoke_run: Path):
    paper = smoke_run / "paper"
    data = json.loads((paper / "reproduction.json").read_text())
    md = (paper / "reproduction.md").read_text()
    page = (paper / "reproduction.html").read_text()
    assert data["summary_line"] in md and data["summary_line"] in page
    # smoke scale: nothing is compared with the paper's numbers
    assert data["summary"]["reproduced"] == data["summary"]["differs"] == 0
    smoke = [r for r in data["numbers"] if r["mean"] is not None]
    assert smoke and all("smoke scale" in r["reason"] for r in smoke)
    logs = sorted((smoke_run / ".snakemake" / "log").glob("*.snakemake.log"))
    assert any(f"dpbandits reproduction: {data['summary_line']}" in log.read_text()
               for log in logs)


@pytest.mark.slow
def test_snakemake_report_captions(smoke_run: Path):
    out = smoke_run / "report.html"
    proc = run_snakemake(smoke_run, "--configfile", str(smoke_run / "smoke.yaml"),
                         "--report", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = out.read_text()
    assert "Reproduction report: every published number" in page
    config = load_config(smoke_run / "smoke.yaml")
    synthetic = [n for n, e in config["experiments"].items() if e["group"] == "synthetic"]
    registered = set(re.findall(r'"filename": "([^"]+)"', page))
    assert "reproduction.html" in registered
    for name in synthetic:
        assert [f for f in registered if re.fullmatch(rf"{name}(_\w+)?\.(png|csv)", f)], name
    assert page.count("for experiment <tt") >= len(synthetic)


def test_every_output_kind_of_the_paper_config_has_a_caption():
    config = load_config(REPO_ROOT / "config" / "config.yaml")
    kinds = {spec["kind"] for exp in config["experiments"].values() for spec in exp["outputs"]}
    captions = REPO_ROOT / "workflow" / "report"
    assert sorted(k for k in kinds if not (captions / f"{k}.rst").is_file()) == []
    assert (captions / "output.rst").is_file() and (captions / "workflow.rst").is_file()
