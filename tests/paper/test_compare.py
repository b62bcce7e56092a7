"""One published number against ours: labels, agreement rules and their boundaries."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from dpbandits.errors import ConfigError
from dpbandits.paper.compare import (
    DEFAULT_RULE,
    agreement_rule,
    apply_rule,
    diverged_runs,
    label_parts,
)
from dpbandits.paper.published import load_published

from conftest import REPO


def test_label_parts():
    assert label_parts("Private-GLM ε=4") == ("Private-GLM", 4.0)
    assert label_parts("Local DP ε0=0.1") == ("Local DP", 0.1)
    assert label_parts("RS-GLinUCB (T2)") == ("RS-GLinUCB (T2)", None)


@pytest.mark.parametrize(
    "rule,mean,se,n,published,status",
    [
        # 90 % interval: mean ± t_{0.95, 9}·s.e. = mean ± 1.833·s.e.
        ({"kind": "relative", "tolerance": 0.05}, 103.1, 1.0, 10, 100.0, "reproduced"),
        ({"kind": "relative", "tolerance": 0.05}, 103.3, 1.0, 10, 100.0, "inconclusive"),
        ({"kind": "relative", "tolerance": 0.05}, 106.9, 1.0, 10, 100.0, "differs"),
        ({"kind": "relative", "tolerance": 0.05}, 96.9, 1.0, 10, 100.0, "reproduced"),
        # precision gate: s.e. 2 > margin 5 / 3, inside the band all the same
        ({"kind": "relative", "tolerance": 0.05}, 100.0, 2.0, 10, 100.0, "inconclusive"),
        ({"kind": "factor", "tolerance": 2.5}, 240.0, 1.0, 10, 100.0, "reproduced"),
        ({"kind": "factor", "tolerance": 2.5}, 37.0, 1.0, 10, 100.0, "differs"),
        ({"kind": "absolute", "tolerance": 0.5}, 1.25, 0.1, 3, 1.0, "inconclusive"),
        ({"kind": "absolute", "tolerance": 0.5}, 1.2, 0.05, 30, 1.0, "reproduced"),
        # an interval that covers the published value but is wider than the margin
        ({"kind": "relative", "tolerance": 0.15}, 2070.0, 884.0, 10, 1220.0, "inconclusive"),
    ],
)
def test_apply_rule_is_equivalence_with_a_precision_gate(rule, mean, se, n, published, status):
    assert apply_rule(rule, mean, se, n, published).status == status


def test_inconclusive_numbers_state_the_trials_that_decide_them():
    decision = apply_rule({"kind": "relative", "tolerance": 0.05}, 100.0, 2.0, 10, 100.0)
    # precision gate: s.e. ≤ 5/3 needs n ≥ (3 · 2√10 / 5)² = 14.4
    assert decision.trials_needed == 15
    assert apply_rule({"kind": "relative", "tolerance": 0.05}, 100.0, 2.0 * (10 / 15) ** 0.5, 15,
                      100.0).status == "reproduced"


def test_a_single_trial_has_no_verdict():
    assert apply_rule(DEFAULT_RULE, 5.0, 0.0, 1, 5.0) is None


def test_diverged_runs_are_counted_against_the_median():
    values = np.array([600, 700, 800, 825, 825, 850, 900, 954, 6537, 8107], float)
    assert diverged_runs(values) == (837.5, 2)
    assert diverged_runs(values[:8]) == (825.0, 0)


def test_repository_agreement_rules():
    rules = yaml.safe_load((REPO / "paper" / "claims.yaml").read_text())["agreement"]
    published = load_published((REPO / "paper" / "published").glob("*.yaml"))

    def rule(ref: str, label: str) -> tuple[str, float]:
        r = agreement_rule(ref, label, published.get(ref, {}), rules, DEFAULT_RULE)
        return r["kind"], r["tolerance"]

    assert rule("glm:table2", "GLM-UCB") == ("relative", 0.05)
    assert rule("glm:table2", "GLOC") == ("relative", 0.05)
    assert rule("glm:table2", "Private-GLM ε=6") == ("relative", 0.10)
    assert rule("glm:table2", "RS-GLinUCB (T2)") == ("relative", 0.10)
    assert rule("glm:fig1_logistic", "ECOLog") == ("relative", 0.15)
    assert rule("glm:fig1_probit", "Private-GLM ε=2") == ("relative", 0.15)
    assert rule("glm:fig1_probit", "Private-GLM (ab8fd16) ε=2") == ("relative", 0.15)
    assert rule("glm:fig1_logistic", "Private-GLM (ab8fd16) ε=8") == ("relative", 0.15)
    assert rule("unknown:entry", "X") == ("relative", 0.10)


def test_bad_agreement_rule_is_one_line():
    with pytest.raises(ConfigError, match="kind 'standard_errors' is not allowed"):
        agreement_rule("a:b", "X", {"agreement": {"kind": "standard_errors", "tolerance": 2}},
                       [], DEFAULT_RULE)
    with pytest.raises(ConfigError, match="kind 'percent' is not allowed"):
        agreement_rule("a:b", "X", {}, [{"published": "a:b", "rule": {"kind": "percent",
                                                                     "tolerance": 1}}],
                       DEFAULT_RULE)
