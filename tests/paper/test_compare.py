"""One published number against ours: labels, agreement rules and their boundaries."""

from __future__ import annotations

import pytest
import yaml

from dpbandits.errors import ConfigError
from dpbandits.paper.compare import DEFAULT_RULE, agreement_rule, apply_rule, label_parts
from dpbandits.paper.published import load_published

from conftest import REPO


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


def test_repository_agreement_rules():
    rules = yaml.safe_load((REPO / "paper" / "claims.yaml").read_text())["agreement"]
    published = load_published((REPO / "paper" / "published").glob("*.yaml"))

    def rule(ref: str, label: str) -> tuple[str, float]:
        r = agreement_rule(ref, label, published.get(ref, {}), rules, DEFAULT_RULE)
        return r["kind"], r["tolerance"]

    assert rule("glm:table2", "GLM-UCB") == ("relative", 0.05)
    assert rule("glm:table2", "GLOC") == ("relative", 0.05)
    assert rule("glm:table2", "Private-GLM ε=6") == ("relative", 0.10)
    assert rule("glm:table2", "RS-GLinUCB (T2)") == ("factor", 2.5)
    assert rule("glm:fig1_logistic", "ECOLog") == ("relative", 0.15)
    assert rule("glm:fig1_probit", "Private-GLM ε=2") == ("relative", 0.15)
    assert rule("glm:fig1_probit", "Private-GLM (ab8fd16) ε=2") == ("standard_errors", 2)
    assert rule("glm:fig1_logistic", "Private-GLM (ab8fd16) ε=8") == ("standard_errors", 2)
    assert rule("unknown:entry", "X") == ("standard_errors", 2)


def test_bad_agreement_rule_is_one_line():
    with pytest.raises(ConfigError, match="kind 'percent' is not allowed"):
        agreement_rule("a:b", "X", {}, [{"published": "a:b", "rule": {"kind": "percent",
                                                                     "tolerance": 1}}],
                       DEFAULT_RULE)
