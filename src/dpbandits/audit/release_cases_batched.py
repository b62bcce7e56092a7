"""Release checks of the batched eliminations (Hanna et al., Algorithms 1–3): their pairs,
instance and driver.

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
