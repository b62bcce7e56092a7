"""End-to-end audits of private policies on neighbouring reward streams."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from dpbandits.audit.algorithms import (
    BIG,
    POLICY_AUDITS,
    NeighbourEnvironment,
    PolicyAudit,
    ShiftedNormalStream,
    policy_samples,
    unaudited_private_policies,
)
from dpbandits.audit.bounds import epsilon_lower_bound
from dpbandits.audit.registry import available, run_audit
from dpbandits.instances.registry import build_instance
from dpbandits.policies.base import Policy

POOL = {"generator": "logistic_pool", "d": 3, "n_arms": 10, "K": 3, "horizon": 30, "S": 2.0,
        "seed": 1}


class LeakyPolicy(Policy):
    """Claims ε-DP but copies the first reward into every later action (no noise at all)."""

    name = "LeakyTest"
    private = True
    families: ClassVar[tuple[str, ...]] = ("logistic", "probit", "linear")

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self.first: float | None = None

    def select(self, t: int, arms: np.ndarray) -> int:
        if self.first is None:
            return int(self.rng.integers(len(arms)))
        return 0 if self.first > 0.5 else len(arms) - 1

    def update(self, t: int, x: np.ndarray, r: float) -> None:
        if self.first is None:
            self.first = r


class RandomisedResponsePolicy(LeakyPolicy):
    """ε-DP by randomised response on the first reward: keep it w.p. e^ε/(1 + e^ε)."""

    name = "RandomisedResponseTest"

    def update(self, t: int, x: np.ndarray, r: float) -> None:
        if self.first is None:
            keep = self.rng.random() < np.exp(self.epsilon) / (1 + np.exp(self.epsilon))
            self.first = r if keep else 1.0 - r


def test_every_private_policy_has_an_end_to_end_audit() -> None:
    assert unaudited_private_policies() == []
    names = {n for n, s in available().items() if s.kind == "algorithm"}
    assert names == set(POLICY_AUDITS) & names
    assert names, "no private policy registered"


def test_a_leaking_policy_is_caught_end_to_end() -> None:
    audit = PolicyAudit("LeakyTest", POOL, default_runs=200)
    samples = policy_samples(audit, 1.0, 1e-5, 200, np.random.default_rng(0), cls=LeakyPolicy)
    bound = epsilon_lower_bound(samples.scores0, samples.scores1, samples.delta)
    assert bound.epsilon_lb > 1.0


def test_a_randomised_response_policy_is_not_flagged_and_its_epsilon_is_seen() -> None:
    """Exactly ε-DP (ε = 2) through the actions: the bound stays below 2 but is informative."""
    audit = PolicyAudit("RandomisedResponseTest", POOL, default_runs=400)
    samples = policy_samples(audit, 2.0, 1e-5, 400, np.random.default_rng(1),
                             cls=RandomisedResponsePolicy)
    bound = epsilon_lower_bound(samples.scores0, samples.scores1, samples.delta)
    assert 0.5 < bound.epsilon_lb <= 2.0


def test_neighbour_environment_changes_only_the_chosen_round() -> None:
    instance = build_instance(dict(POOL))
    base, other = instance.environment(0), instance.environment(0)
    env = NeighbourEnvironment(base, 4, 0.25)
    for t in range(10):
        r, reg = env.pull(t, 1)
        r0, reg0 = other.pull(t, 1)
        assert reg == reg0
        assert r == (0.25 if t == 4 else r0)
    assert env.played == [(t, 1) for t in range(10)]
    np.testing.assert_array_equal(env.arms(3), other.arms(3))


def test_shifted_stream_moves_exactly_one_draw_across_calls() -> None:
    plain = np.random.default_rng(5)
    shifted = ShiftedNormalStream(np.random.default_rng(5), 4, BIG)
    a = np.concatenate([plain.standard_normal(3), plain.standard_normal(4)])
    b = np.concatenate([shifted.standard_normal(3), shifted.standard_normal(4)])
    diff = b - a
    assert diff[4] == BIG and np.count_nonzero(diff) == 1
    with pytest.raises(NotImplementedError):
        shifted.normal(0.0, 1.0, 3)


@pytest.mark.parametrize("name, accounting", [("AdaPrivate-TS", "strict"),
                                              ("CentralDPElimination", "strict"),
                                              ("CentralDPElimination", "paper")])
def test_real_private_policies_stay_below_their_claim(name: str, accounting: str) -> None:
    if name not in available():
        pytest.skip(f"{name} has not landed")
    result = run_audit(name, 1.0, 1e-5, runs=60, seed=4, accounting=accounting)
    assert not result.violated, result.summary()
    assert result.claimed_epsilon == 1.0


def test_elimination_audit_really_changes_the_transcript_without_noise() -> None:
    """With ε so large the noise vanishes, the clipped ±1 change of the first reward moves the
    elimination decisions: the same machinery then reports a large ε, so a zero bound at real
    budgets is not an artefact of a pair that does nothing."""
    if "CentralDPElimination" not in available():
        pytest.skip("CentralDPElimination has not landed")
    base = POLICY_AUDITS["CentralDPElimination"]
    audit = PolicyAudit(base.policy, {**base.instance, "noise_sd": 0.1}, rewards=None,
                        shifts=base.shifts)
    samples = policy_samples(audit, 1e4, 1e-6, 40, np.random.default_rng(2))
    bound = epsilon_lower_bound(samples.scores0, samples.scores1, 0.0)
    assert bound.epsilon_lb > 1.5
