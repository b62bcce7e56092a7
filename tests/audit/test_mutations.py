"""The mutation harness (fast subset): every weakening of two TS-family policies and of the
zCDP linear baselines is caught."""

from __future__ import annotations

from collections import Counter

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

ZCDP_LINEAR = ("DGS-LinUCB", "zCDP-Episodic", "RarelySwitching-zCDP", "AdaC-OFUL-zCDP")


def test_catalogue_covers_every_checked_policy_with_every_weakening() -> None:
    entries = catalogue()
    ts = [m for m, _ in entries if m.policy.startswith("AdaPrivate")]
    assert len(ts) == 4 * len(WEAKENINGS[:5]) == 20
    eliminations = [m for m, _ in entries if m.policy.endswith("DPElimination")]
    assert len(eliminations) == 3 * 4  # no context clip: the actions are public
    counts = Counter(m.policy for m, _ in entries)
    for policy in ("AdaPrivate-TS", "AdaPrivate-TS-Amp", "AdaPrivate-TS-Adaptive",
                   "AdaPrivate-UCB", *ZCDP_LINEAR):
        assert counts[policy] == len(WEAKENINGS[:5]) == 5
    assert counts["Private-GLM"] == 6 and counts["JDP-LinUCB"] == 4
    assert mutation_named("AdaPrivate-TS: noise × 0.1") == Mutation("AdaPrivate-TS",
                                                                     "noise × 0.1")
    with pytest.raises(ConfigError, match="mutation 'x' is not allowed; allowed: "):
        mutation_named("x")


@pytest.mark.parametrize("policy", ["AdaPrivate-TS", "AdaPrivate-TS-Amp", *ZCDP_LINEAR])
def test_every_weakening_is_caught_naming_the_release(policy: str) -> None:
    results = run_mutations([policy])
    assert [r.weakening for r in results] == list(WEAKENINGS[:5])
    missed = [r.weakening for r in results if not r.caught]
    assert missed == []
    assert all("release '" in r.evidence for r in results)
    lines = coverage_lines(results)
    assert lines[0].startswith("Mutation score of the release checks: 5 / 5")
    cells = ["caught"] * 5 + ["n/a"] * (len(WEAKENINGS) - 5)
    assert lines[-1] == f"| {policy} | " + " | ".join(cells) + " | 5 / 5 |"


ELIMINATIONS = ["CentralDPElimination", "LocalDPElimination", "ShuffleDPElimination"]


def test_every_weakening_of_the_eliminations_is_caught_naming_the_release() -> None:
    results = run_mutations(ELIMINATIONS)
    assert [(r.policy, r.weakening) for r in results] == [
        (p, w) for p in ELIMINATIONS for w in WEAKENINGS[:5] if w != "context clip removed"]
    assert [r.weakening for r in results if not r.caught] == []
    assert all("release 'batch " in r.evidence for r in results)
    by = {(r.policy, r.weakening): r.evidence for r in results}
    assert "overspent" in by["ShuffleDPElimination", "noise × 0.1"]
    assert "> declared sensitivity 2" in by["LocalDPElimination", "reward clip removed"]
    assert "> declared sensitivity 0.2" in by["CentralDPElimination", "sensitivity ÷ 10"]
    assert "noise drawn has 0.0" in by["ShuffleDPElimination", "ledger from the plan"]
    lines = coverage_lines(results)
    assert lines[0].startswith("Mutation score of the release checks: 12 / 12")


def test_every_weakening_of_shuffle_glm_is_caught_naming_the_release() -> None:
    """Both shuffle releases of a batch: SymSum's Gram matrix and P_GD's gradient sums."""
    results = run_mutations(["Shuffle-GLM"])
    assert [r.weakening for r in results] == [
        "noise × 0.1", "context clip removed", "ledger from the plan", "gradient noise × 0.1",
        "gradient clip removed", "gradient ledger from the plan"]
    assert [r.weakening for r in results if not r.caught] == []
    by = {r.weakening: r.evidence for r in results}
    assert "overspent" in by["noise × 0.1"] and "'batch 1 Gram matrix'" in by["noise × 0.1"]
    assert "'batch 1 Gram matrix'" in by["context clip removed"]
    assert "> declared sensitivity 2" in by["context clip removed"]
    assert "release 'batch 1 Gram matrix': the noise drawn" in by["ledger from the plan"]
    assert "overspent" in by["gradient noise × 0.1"] and "estimate'" in by["gradient noise × 0.1"]
    assert "estimate' #" in by["gradient clip removed"]
    assert "'batch 1 estimate': the noise drawn" in by["gradient ledger from the plan"]


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


def test_every_private_policy_is_checked_and_has_weakenings() -> None:
    """The catalogue covers every registered private policy (a new one must join it)."""
    from dpbandits.audit.release_checks import CASES
    from dpbandits.policies import POLICIES

    private = {name for name, cls in POLICIES.items() if cls.private}
    assert private == {c.policy for c in CASES}
    assert private == {m.policy for m, _ in catalogue()}
