"""Release checks of the batched policies: the eliminations (Hanna et al., Algorithms 1–3)
and Shuffle-GLM (docs/glm.md, "Algorithm 1"); their pairs, instances and drivers.

The eliminations draw every reward themselves from `env.noise_rng()` inside `play_batched`, so a
pair changes the reward stream: the `t0`-th standard-normal draw (one user's reward, in play
order) is moved by `shifts` (`audit.algorithms.BatchedNeighbourEnvironment`). ±10¹² puts the
reward far out of range (strict and the cases' paper runs clip it to ±1); ±0.5 keeps it in
range. The relation is a user's reward: the actions are public (docs/audits.md,
"Release checks").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from dpbandits.audit.algorithms import BatchedNeighbourEnvironment
from dpbandits.audit.spec import BIG
from dpbandits.contract import FixedActionEnvironment
from dpbandits.instances.registry import build_instance
from dpbandits.policies import make_policy
from dpbandits.privacy.ledger import PrivacyLedger
from dpbandits.privacy.release import ReleaseRecord, recording

if TYPE_CHECKING:  # release_checks lists these cases in CASES: imported where used
    from dpbandits.audit.release_checks import Pair, PolicyCase

# Users (draws, in play order) the pairs change: batch 1 (the first few), 2, 3 and 4 at T = 400.
USERS = (0, 1, 3, 6, 10, 17, 30, 45, 70, 100)
SHIFTS = ((-BIG, BIG), (-0.5, 0.5))


def shifted_reward_pairs(case: PolicyCase, seeds: int) -> list[tuple[int, Pair]]:
    """(seed, pair): user t0's reward draw moved by −10¹² vs +10¹² and by −0.5 vs +0.5
    (`Pair.rewards` holds the shifts), every user of `USERS`, a seed of its own per pair."""
    from dpbandits.audit.release_checks import Pair

    chosen = [Pair("reward", t0, shifts) for shifts in SHIFTS for t0 in USERS
              if t0 < case.horizon]
    return [(seed * len(chosen) + k, pair) for seed in range(seeds)
            for k, pair in enumerate(chosen)]


def shifted_instance(case: PolicyCase, pair: Pair, side: int,
                     seed: int) -> tuple[FixedActionEnvironment]:
    """(environment,) of side 0 or 1 of `pair`: K actions on the sphere in d dimensions, the
    reward stream's t0-th standard-normal draw moved by the side's shift."""
    base = build_instance({"generator": "linear_sphere", "K": case.K, "d": case.d,
                           "horizon": case.horizon, "seed": seed}).environment(0)
    return (BatchedNeighbourEnvironment(base, pair.rewards[side], pair.t0),)


def play_batched(case: PolicyCase, accounting: str, env: FixedActionEnvironment, seed: int,
                 replay: list[ReleaseRecord] | None = None
                 ) -> tuple[list[ReleaseRecord], PrivacyLedger]:
    """Every release of one batched run of the policy (`play_batched`). `finish` is not called:
    it makes no release (it voids a ledger whose Δ is below 2·clip, in strict mode by raising,
    which would hide the sensitivity mutation from the checks themselves)."""
    from dpbandits.audit.release_checks import DELTA, EPSILON

    policy = make_policy(case.policy, env.info, np.random.default_rng(seed),
                         epsilon=EPSILON, delta=DELTA, accounting=accounting, **case.params)
    with recording(replay) as recorder:
        policy.play_batched(env)  # type: ignore[attr-defined]
    assert policy.ledger is not None
    return recorder.records, policy.ledger


def elimination_case(policy: str) -> PolicyCase:
    """A batched elimination on linear_sphere, K = 4, d = 2, T = 400, rewards clipped to ±1 in
    both modes (paper mode's default, unclipped, voids its ε by a ledger breach), width_scale
    0.02 so that the noisy sums decide eliminations."""
    from dpbandits.audit.release_checks import PolicyCase

    return PolicyCase(policy, {"clip": 1.0, "width_scale": 0.02}, ("reward",), d=2, K=4,
                      horizon=400, pairs=shifted_reward_pairs, instance=shifted_instance,
                      play=play_batched)


def elimination_cases() -> tuple[PolicyCase, ...]:
    """The three private eliminations' cases."""
    return tuple(elimination_case(name) for name in
                 ("CentralDPElimination", "LocalDPElimination", "ShuffleDPElimination"))


# Shuffle-GLM (docs/glm.md, "Algorithm 1"): a user's record, its context and its reward, is
# what a batch's two shuffle releases (SymSum's Gram matrix, P_GD's gradient sums) protect.
GLM_USERS = (0, 7, 20, 39, 40, 60, 89, 149)
GLM_KINDS = (("reward", (0.0, 1.0), (1.0, 1.0)), ("reward", (-3.0, 4.0), (1.0, 1.0)),
             ("reward", (-BIG, BIG), (1.0, 1.0)), ("context", (1.0, 1.0), (1.0, 1.0)),
             ("context", (0.0, 0.0), (5.0, 5.0)))


def glm_pairs(case: PolicyCase, seeds: int) -> list[tuple[int, Pair]]:
    """(seed, pair): user t0's reward 0 vs 1, −3 vs 4 and ∓10¹² (out of range), or its arms
    replaced by other directions of norm 1 or 5 (out of range); a seed of its own per pair."""
    from dpbandits.audit.release_checks import Pair

    chosen = [Pair(relation, t0, rewards, norms) for relation, rewards, norms in GLM_KINDS
              if relation in case.relations for t0 in GLM_USERS if t0 < case.horizon]
    return [(seed * len(chosen) + k, pair) for seed in range(seeds)
            for k, pair in enumerate(chosen)]


def glm_instance(case: PolicyCase, pair: Pair, side: int,
                 seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(arms (T, K, d) of unit norm, rewards (T, K) in {0, 1}) of side 0 or 1 of `pair`: a
    context pair gives user t0 other arm directions on side 1, both sides scaled by the
    side's norm; every pair sets user t0's rewards to the side's value."""
    g = np.random.default_rng([seed, 43])
    arms = g.standard_normal((case.horizon, case.K, case.d))
    other = g.standard_normal((case.K, case.d))
    rewards = (g.random((case.horizon, case.K)) < 0.5).astype(float)
    if pair.relation == "context" and side == 1:
        arms[pair.t0] = other
    arms /= np.linalg.norm(arms, axis=2, keepdims=True)
    arms[pair.t0] *= pair.norms[side]
    rewards[pair.t0] = pair.rewards[side]
    return arms, rewards


def refused(exc: ValueError) -> bool:
    """The vector summation's refusal of a user's vector beyond its bound (`_check_vectors`)."""
    return "has norm" in str(exc)


def play_glm_rounds(case: PolicyCase, accounting: str, arms: np.ndarray, rewards: np.ndarray,
                    seed: int, replay: list[ReleaseRecord] | None = None
                    ) -> tuple[list[ReleaseRecord], PrivacyLedger]:
    """Every release of one run (`select`/`update`, logistic link, S = 2). A batch whose
    summation refuses a vector beyond its bound (paper mode does not clip contexts) ends
    the run there: no release is made from it."""
    from dpbandits.audit.release_checks import DELTA, EPSILON
    from dpbandits.contract import ProblemInfo

    info = ProblemInfo("logistic", case.d, case.K, case.horizon, 2.0)
    policy = make_policy(case.policy, info, np.random.default_rng(seed), epsilon=EPSILON,
                         delta=DELTA, accounting=accounting, **case.params)
    with recording(replay) as recorder:
        try:
            for t in range(case.horizon):
                prepared = policy.prepare_arms(arms[t])
                i = policy.select(t, prepared)
                policy.update(t, prepared[i], float(rewards[t, i]))
            policy.finish()
        except ValueError as exc:
            if not refused(exc):
                raise
    assert policy.ledger is not None
    return recorder.records, policy.ledger


def shuffle_glm_case() -> PolicyCase:
    """Shuffle-GLM, d = 2, K = 4, T = 150 in batches of 40, 50 and 60 (two release batches),
    the theory constants of vector summation in both modes."""
    from dpbandits.audit.release_checks import PolicyCase

    return PolicyCase("Shuffle-GLM", {"n_batches": 3, "warmup_length": 40, "alpha": 50.0,
                                      "gd_max_iters": 20},
                      ("reward", "context"), d=2, K=4, horizon=150, pairs=glm_pairs,
                      instance=glm_instance, play=play_glm_rounds)
