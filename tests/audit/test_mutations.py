"""The mutation harness (fast subset): every weakening of two TS-family policies is caught."""

from __future__ import annotations

import pytest

from dpbandits.audit.mutations import (
    WEAKENINGS,
    Mutation,
    catalogue,
    coverage_lines,
    mutation_named,
    run_mutations,
)
from dpbandits.errors import ConfigError


def test_catalogue_covers_every_checked_policy_with_every_weakening() -> None:
    entries = catalogue()
    assert len(entries) == 4 * 5 + 6 + 4 == 30  # the TS family's 5 each, Private-GLM, JDP
    assert mutation_named("AdaPrivate-TS: noise × 0.1") == Mutation("AdaPrivate-TS",
                                                                     "noise × 0.1")
    with pytest.raises(ConfigError, match="mutation 'x' is not allowed; allowed: "):
        mutation_named("x")


@pytest.mark.parametrize("policy", ["AdaPrivate-TS", "AdaPrivate-TS-Amp"])
def test_every_weakening_is_caught_naming_the_release(policy: str) -> None:
    results = run_mutations([policy])
    assert [r.weakening for r in results] == list(WEAKENINGS[:5])
    missed = [r.weakening for r in results if not r.caught]
    assert missed == []
    assert all("release '" in r.evidence for r in results)
    lines = coverage_lines(results)
    assert lines[0].startswith("Mutation score of the release checks: 5 / 5")
    assert lines[-1] == (f"| {policy} | " + " | ".join(["caught"] * 5 + ["n/a"] * 2)
                         + " | 5 / 5 |")


# which release each weakening is caught at, and by which check's words
JOINT_EVIDENCE = {
    ("Private-GLM", "noise × 0.1"): "overspent",
    ("Private-GLM", "context clip removed"): "'V-tree node' #0",
    ("Private-GLM", "sensitivity ÷ 10"): "'V-tree node'",
    ("Private-GLM", "ledger from the plan"): "the noise drawn has 0.1",
    ("Private-GLM", "tree-node noise × 0.1"): "'V-tree node': the noise drawn has 0.1",
    ("Private-GLM", "gradient noise × 0.1"): "'theta_w fits': the noise drawn has 0.",
    ("JDP-LinUCB", "reward clip removed"): "'tree node' #0",
    ("JDP-LinUCB", "context clip removed"): "'tree node' #0",
    ("JDP-LinUCB", "sensitivity ÷ 10"): "'tree node'",
    ("JDP-LinUCB", "ledger from the plan"): "'tree node': the noise drawn has 0.1",
}


def test_every_weakening_of_the_joint_dp_policies_is_caught_naming_the_release() -> None:
    results = run_mutations(["Private-GLM", "JDP-LinUCB"])
    assert {(r.policy, r.weakening) for r in results} == set(JOINT_EVIDENCE)
    for r in results:
        assert r.caught and "release '" in r.evidence, r
        assert JOINT_EVIDENCE[(r.policy, r.weakening)] in r.evidence, r.evidence
    assert coverage_lines(results)[0].startswith(
        "Mutation score of the release checks: 10 / 10")
