"""numbers.tex macros: values from the summaries, keys, formatting, and the keys main.tex uses."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from dpbandits.config import load_config
from dpbandits.paper.numbers import (
    declared_keys,
    experiment_numbers,
    fmt,
    fmt_pm,
    render,
    report_numbers,
    write_numbers,
)
from dpbandits.paper.published import load_claims_file, load_published

from conftest import REPO


def summary() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = []
    for label, policy, eps in (("RS-GLinUCB (T2)", "RS-GLinUCB", None),
                               ("RS-GLinUCB (C)", "RS-GLinUCB", None),
                               ("Private-GLM", "Private-GLM", 4.0), ("GLOC", "GLOC", None)):
        for s_index, s in enumerate((2.0, 3.0)):
            for seed in range(5):
                rows.append({"algorithm": label, "policy": policy,
                             "epsilon": np.nan if eps is None else eps, "S": s,
                             "instance_index": s_index, "seed": seed, "T": 500,
                             "regret": 100 * s + rng.normal(0, 10), "mean_reward": 0.4,
                             "kappa": 18.03 if s == 2.0 else 212.47})
    return pd.DataFrame(rows)


def test_fmt():
    assert fmt_pm(1400.27, 12.345) == "$1400.3 \\pm 12.3$"
    assert fmt_pm(18.034, 0.5) == "$18.03 \\pm 0.50$"
    assert fmt_pm(3.0, None) == "$3.00$"
    assert fmt(1400.27) == "1400.3"
    assert fmt(18.034) == "18.03"
    assert fmt(0.004567) == "0.00457"
    assert fmt(None) == fmt(math.nan) == r"\textbf{n/a}"


def test_experiment_numbers_match_the_trials():
    df = summary()
    out = experiment_numbers("glm_table2", df, ["S"])
    cell = df[(df["algorithm"] == "Private-GLM") & (df["S"] == 3.0)]["regret"]
    key = "glm_table2/Private-GLM/eps=4/S=3"
    assert out[f"{key}/regret"] == fmt(cell.mean())
    assert out[f"{key}/regret_se"] == fmt(cell.std(ddof=1) / math.sqrt(5))
    assert out[f"{key}/regret_pm"] == f"${cell.mean():.1f} \\pm {cell.std(ddof=1) / 5**.5:.1f}$"
    assert out[f"{key}/n"] == "5"
    assert out["glm_table2/T"] == "500" and out["glm_table2/trials"] == "5"
    assert out["glm_table2/inst/S=2/kappa"] == "18.03"
    assert "glm_table2/RS-GLinUCB_T2/S=2/regret" in out
    # one label per policy → policy alias; two labels share RS-GLinUCB → none
    assert out["glm_table2/policy/GLOC/S=2/regret"] == out["glm_table2/GLOC/S=2/regret"]
    assert out["glm_table2/policy/Private-GLM/eps=4/S=3/regret"] == out[f"{key}/regret"]
    assert not any(k.startswith("glm_table2/policy/RS-GLinUCB/") for k in out)


def test_report_numbers():
    rep = {"summary": {"reproduced": 3, "differs": 1, "not run": 2},
           "summary_line": "3 reproduced, 1 differ, 2 not run",
           "claims": [{"id": "c1", "status": "differs", "p_value": 0.031},
                      {"id": "c2", "status": "reproduced", "p_value": None}],
           "numbers": [{"family": "glm", "entry": "table2", "label": "Private-GLM ε=4",
                        "grid": "S=2", "published": 674.17, "mean": 690.04,
                        "status": "reproduced"}]}
    out = report_numbers(rep)
    assert out["repro/summary"] == "3 reproduced, 1 differ, 2 not run"
    assert out["repro/differ"] == "1"
    assert out["claim/c1"] == "differs" and out["claim/c1/p"] == "$p=0.031$"
    assert "claim/c2/p" not in out
    assert out["pub/glm/table2/Private-GLM/eps=4/S=2/published"] == "674.2"
    assert out["pub/glm/table2/Private-GLM/eps=4/S=2/verdict"] == "reproduced"


def test_render_defines_each_key_once_and_escapes(tmp_path):
    text = render({"a/b": "x_y & 50%", "a/c": "$1 \\pm 2$"})
    assert r"\dpbdef{a/b}{x\_y \& 50\%}" in text
    assert r"\dpbdef{a/c}{$1 \pm 2$}" in text
    with pytest.raises(ValueError, match="cannot take"):
        render({"a{b": "1"})
    config = {"experiments": {"glm_table2": {"instance_grid": {"S": [2.0, 3.0]}},
                              "missing": {}}}
    out = write_numbers(config, {"glm_table2": summary(), "missing": None}, None,
                        tmp_path / "numbers.tex")
    written = (tmp_path / "numbers.tex").read_text()
    assert written.count(r"\dpbdef{") == len(out)


def test_main_tex_uses_only_keys_the_paper_config_defines():
    config = load_config(REPO / "config" / "config.yaml")
    claims = [c["id"] for c in load_claims_file(REPO / "paper" / "claims.yaml")["claims"]]
    keys = declared_keys(config, load_published((REPO / "paper" / "published").glob("*.yaml")),
                         claims)
    text = "\n".join(line for line in (REPO / "paper" / "main.tex").read_text().splitlines()
                     if not line.lstrip().startswith("%"))
    used = set(re.findall(r"\\(?:dpb|verdict)\{([^{}#]+)\}", text))
    assert len(used) > 30
    assert sorted(used - keys) == []


def test_declared_keys_cover_what_experiment_numbers_writes():
    df = summary()
    config = {"experiments": {"glm_table2": {
        "instance_grid": {"S": [2.0, 3.0]}, "epsilons": [4],
        "algorithms": [{"label": "RS-GLinUCB (T2)", "policy": "RS-GLinUCB",
                        "params": {"variant": "T2"}},
                       {"label": "RS-GLinUCB (C)", "policy": "RS-GLinUCB",
                        "params": {"variant": "C"}},
                       {"label": "Private-GLM", "policy": "Private-GLM"},
                       {"label": "GLOC", "policy": "GLOC"}]}}}
    keys = declared_keys(config, {}, [])
    written = set(experiment_numbers("glm_table2", df, ["S"]))
    assert written <= keys
