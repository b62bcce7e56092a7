"""White-box release checks: each check fails on the violation it exists for, and the TS
family passes them unweakened."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dpbandits.audit.release_checks import (
    CASES,
    ZCDP_LINEAR_CASES,
    changed_violations,
    check_case,
    ledger_violations,
    noise_violations,
    sensitivity_violations,
)
from dpbandits.privacy.ledger import PrivacyLedger
from dpbandits.privacy.release import Drawn, ReleaseRecord, gaussian_rho


def record(statistic, released=None, *, index=0, sensitivity=1.0, scale=2.0, entry=None,
           name="s") -> ReleaseRecord:
    statistic = np.asarray(statistic, dtype=float)
    return ReleaseRecord(index, name, "batch 1", statistic,
                         statistic if released is None else np.asarray(released, dtype=float),
                         sensitivity, "l2", Drawn("gaussian", scale, sensitivity), entry)


def test_a_gap_above_the_declared_sensitivity_is_one_violation_naming_the_release() -> None:
    a = [record([0.0, 0.0]), record([5.0, 5.0], index=1)]
    assert sensitivity_violations("p", a, [record([0.6, 0.8]), record([5.0, 5.0], index=1)]) == []
    (line,) = sensitivity_violations("p", a, [record([0.6, 0.81]), record([5, 5], index=1)])
    assert "release 's' #0 (batch 1)" in line and "> declared sensitivity 1" in line
    assert "other releases" in sensitivity_violations("p", a, a[:1])[0]


def test_a_ledger_entry_that_does_not_price_the_noise_drawn_is_a_violation() -> None:
    ledger = PrivacyLedger(100.0, 1e-5)
    honest = ledger.add("gaussian", "s", sensitivity=1.0, noise_scale=2.0,
                        rho=gaussian_rho(Drawn("gaussian", 2.0, 1.0)))
    assert ledger_violations("p", [record([0.0], entry=honest)], ledger) == []
    plan = ledger.add("gaussian", "s", sensitivity=1.0, noise_scale=2.0, rho=0.125)
    (line,) = ledger_violations("p", [record([0.0], entry=plan, scale=0.2)], ledger)
    assert "ledger states noise 2" in line and "drawn at 0.2" in line
    cheap = ledger.add("gaussian", "s", sensitivity=1.0, noise_scale=2.0, rho=0.01)
    assert len(ledger_violations("p", [record([0.0], entry=cheap)], ledger)) == 1


def test_an_overspent_strict_ledger_names_its_costliest_release() -> None:
    ledger = PrivacyLedger(1.0, 1e-5)
    entry = ledger.add("gaussian", "s", sensitivity=1.0, noise_scale=0.1, rho=50.0)
    (line,) = ledger_violations("p", [record([0.0], entry=entry, scale=0.1, name="b")], ledger)
    assert "overspent" in line and "costliest: release 'b' (batch 1)" in line


def test_noise_with_a_tenth_of_the_stated_scale_is_caught_and_honest_noise_passes() -> None:
    g = np.random.default_rng(0)
    stats = np.zeros((30, 3))
    honest = [record(s, s + 2.0 * g.standard_normal(3), index=i) for i, s in enumerate(stats)]
    weak = [record(s, s + 0.2 * g.standard_normal(3), index=i) for i, s in enumerate(stats)]
    assert noise_violations("p", honest) == []
    (line,) = noise_violations("p", weak)
    assert "release 's'" in line and "90 coordinates" in line
    assert noise_violations("p", weak[:6]) == []  # 18 coordinates: too few to test


TS_FAMILY = ("AdaPrivate-TS", "AdaPrivate-TS-Amp", "AdaPrivate-TS-Adaptive", "AdaPrivate-UCB")
JOINT = {c.policy: c for c in CASES if c.policy in ("Private-GLM", "JDP-LinUCB")}


@pytest.mark.parametrize("case", [c for c in CASES if c.policy in TS_FAMILY],
                         ids=lambda c: c.policy)
def test_the_ts_family_passes_its_release_checks(case) -> None:
    report = check_case(case, "strict", seeds=1)
    assert report.violations == []
    assert report.pairs == 36 and report.releases == 4 * 36


def test_a_release_moved_in_more_coordinates_than_declared_is_a_violation() -> None:
    """A release priced for one changed coordinate (its snapping adds γ once) whose neighbour
    moves two."""
    one = [replace(record([0.0, 0.0, 0.0]), changed=1)]
    assert changed_violations("p", one, [record([0.0, 0.4, 0.0])]) == []
    (line,) = changed_violations("p", one, [record([0.3, 0.4, 0.0])])
    assert "release 's' #0 (batch 1)" in line and "differ in 2 coordinates > declared 1" in line
    assert changed_violations("p", [record([0.0, 0.0])], [record([1.0, 1.0])]) == []


ELIMINATIONS = [c for c in CASES if c.policy.endswith("DPElimination")]


@pytest.mark.parametrize("mode", ["strict", "paper"])
@pytest.mark.parametrize("case", ELIMINATIONS, ids=lambda c: c.policy)
def test_the_eliminations_pass_their_release_checks(case, mode: str) -> None:
    """A user's reward moved by ±10¹² (out of range) and ±0.5, users of batches 1–4."""
    assert len(ELIMINATIONS) == 3 and case.relations == ("reward",)
    report = check_case(case, mode, seeds=1)
    assert report.violations == []
    assert report.pairs == 20 and report.releases >= 3 * 20


@pytest.mark.parametrize("mode", ["strict", "paper"])
def test_shuffle_glm_passes_its_release_checks(mode: str) -> None:
    """A user's reward (0 vs 1, −3 vs 4, ∓10¹²) or context (other directions of norm 1 or 5)
    through both shuffle releases of each batch. Paper mode does not clip contexts: its
    summation refuses the norm-5 users, on both sides, and the run ends there."""
    (case,) = [c for c in CASES if c.policy == "Shuffle-GLM"]
    assert case.relations == ("reward", "context")
    report = check_case(case, mode, seeds=1)
    assert report.violations == []
    assert report.pairs == 40
    assert report.releases == (4 * 40 if mode == "strict" else 4 * 32 + 10)


def test_a_merged_entry_prices_each_of_its_releases() -> None:
    """An entry of `count` releases states the smallest σ and the largest ρ drawn: it prices a
    release drawn at a larger σ, not one drawn at a smaller σ or costing more than it states."""
    ledger = PrivacyLedger(100.0, 1e-5)
    entry = ledger.add("gaussian", "s", sensitivity=1.0, noise_scale=2.0, count=2,
                       rho=gaussian_rho(Drawn("gaussian", 2.0, 1.0)))
    assert ledger_violations("p", [record([0.0], entry=entry, scale=3.0)], ledger) == []
    (line,) = ledger_violations("p", [record([0.0], entry=entry, scale=1.5)], ledger)
    assert "release 's' #0" in line and "drawn at 1.5" in line
    (line,) = ledger_violations("p", [record([0.0], entry=entry, scale=3.0, sensitivity=2.0)],
                                ledger)
    assert "costs 0.222" in line


@pytest.mark.parametrize("case", ZCDP_LINEAR_CASES, ids=lambda c: c.policy)
def test_the_zcdp_linear_baselines_pass_their_release_checks_in_both_modes(case) -> None:
    """Every fourth user, a batch's last and the run's last, in the three reward pairs."""
    users = len({*range(0, case.horizon, 4), 9, case.horizon - 1})
    for mode in ("strict", "paper"):
        report = check_case(case, mode, seeds=1)
        assert report.violations == []
        assert report.pairs == 3 * users and report.releases >= 5 * report.pairs
        if case.policy == "DGS-LinUCB":  # θ̂ every round
            assert report.releases == case.horizon * report.pairs


@pytest.mark.parametrize("mode", ["strict", "paper"])
@pytest.mark.parametrize("policy", ["Private-GLM", "JDP-LinUCB"])
def test_the_joint_dp_policies_pass_their_release_checks(policy: str, mode: str) -> None:
    """A user's whole record (arms redrawn, of norm 5, rewards out of range) and its reward;
    paper Private-GLM claims the reward only (its ledger records the breach for contexts)."""
    report = check_case(JOINT[policy], mode, seeds=1)
    assert report.violations == []
    pairs = 24 if (policy, mode) == ("Private-GLM", "paper") else 48
    assert report.pairs == pairs and len(JOINT[policy].relations) == 2


def test_the_private_glm_pairs_run_its_warm_up_fits_and_every_tree_node() -> None:
    """Criterion I fires in most rounds and the counter triggers the c₁ = 6 θ_w fits: each fit
    is a noisy count and K = 12 gradient sums, each round a node of the V tree, the H tree (on
    the other rounds' leaves) and the counter."""
    case = JOINT["Private-GLM"]
    fits, h_leaves = [], 0
    for seed, pair in case.pairs(case, 1)[::12]:
        records, _ = case.play(case, "strict", *case.instance(case, pair, 0, seed), seed)
        names = [r.name for r in records]
        for tree in ("V-tree node", "H-tree node", "warm-up counter node"):
            assert names.count(tree) == case.horizon
        fits.append(names.count("theta_w fits: count"))
        assert names.count("theta_w fits") == 12 * fits[-1]
        h_leaves += sum(r.name == "H-tree node" and bool(r.statistic.any()) for r in records)
    assert fits == [6] * 4 and h_leaves > 10, (fits, h_leaves)


def test_a_replayed_tree_answers_the_first_runs_queries() -> None:
    """D1 (another leaf for user 2, the same seed) replaying D0's node releases: every query
    of its tree is D0's, bit for bit (exact noise), while its node statistics are its own."""
    from dpbandits.privacy.exact_noise import ExactNoise
    from dpbandits.privacy.release import recording
    from dpbandits.privacy.tree import MatrixTree

    def run(other: float, replay=None):
        rng = np.random.default_rng(3)
        tree = MatrixTree(8, 2, 0.5, rng, noise=ExactNoise(rng))
        queries = []
        with recording(replay) as recorder:
            for t in range(8):
                leaf = np.full((2, 2), other if t == 2 else 0.1 * t)
                tree.update(leaf)
                tree.release_node(tree.noise, tree.state.prefix, name="node", sensitivity=2.0,
                                  entry=None)
                queries.append(tree.query_raw())
        return recorder.records, queries

    first, q0 = run(0.5)
    second, q1 = run(-0.5, replay=first)
    assert [r.partition for r in second] == [r.partition for r in first]
    assert all(np.array_equal(a, b) for a, b in zip(q0, q1, strict=True))
    _, alone = run(-0.5)  # not replaying: the same noise, another answer from leaf 3 on
    same = [np.array_equal(a, b) for a, b in zip(q0, alone, strict=True)]
    assert same == [True] * 2 + [False] * 6
    gaps = [float(np.linalg.norm(a.statistic - b.statistic))
            for a, b in zip(first, second, strict=True)]
    assert gaps[2] > 0 and gaps[3] > 0 and gaps[0] == gaps[1] == 0.0  # leaves 3, 1–4


@pytest.mark.parametrize("broken", ["tree replay", "kernel rerun"])
def test_without_the_tree_replay_the_neighbouring_runs_part_and_the_checks_say_so(
        broken: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The negative control of the replay: D1's trees not answering with D0's nodes, or
    Private-GLM's kernel not run again with the replayed noise, lets D1's later users act on
    other outputs, and fits on other data exceed their sensitivity."""
    from dpbandits.policies import private_glm
    from dpbandits.privacy import tree

    if broken == "tree replay":
        monkeypatch.setattr(tree, "replaying", lambda: False)
        monkeypatch.setattr(private_glm, "replaying", lambda: False)
    else:
        monkeypatch.setattr(private_glm.PrivateGLM, "_snapshot", lambda self: None)
    report = check_case(JOINT["Private-GLM"], "strict", seeds=1)
    assert any("release 'theta_w fits'" in v for v in report.violations)
