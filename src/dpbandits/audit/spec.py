"""What an audit is: the samples it yields, an audit's entry, and a policy's declared pair.

Light on purpose: policies declare their own end-to-end audits (`Policy.audits`) with
`PolicyAudit`, so this module imports nothing heavy (docs/audits.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpbandits.errors import ConfigError

BIG = 1e12
PAIRS = ("reward", "context")

# Small instances the policy audits run on.
SMALL_LINEAR = {"generator": "linear_sphere", "K": 4, "d": 2, "horizon": 400, "seed": 3}
SMALL_POOL = {"generator": "logistic_pool", "d": 3, "n_arms": 10, "K": 3, "horizon": 60,
              "S": 2.0, "seed": 1}
GLM_PAIR = {"generator": "glm_ball", "family": "probit", "d": 2, "K": 5, "S": 4.0,
            "horizon": 20, "seed": 1}
UNIT_NORMS = (1.0, 0.05)


@dataclass(frozen=True)
class AuditSamples:
    """Scalar distinguisher outputs on the two neighbouring inputs, and the ε, δ claimed there."""

    scores0: np.ndarray
    scores1: np.ndarray
    claimed_epsilon: float
    delta: float
    pair: str
    statistic: str
    info: dict[str, float] = field(default_factory=dict)
    vacuous: bool = False


Sampler = Callable[..., AuditSamples]


@dataclass(frozen=True)
class AuditSpec:
    """An audit: how to sample it, its kind, its default runs per input and (ε, δ) point."""

    name: str
    kind: str
    sampler: Sampler
    default_runs: int
    description: str
    options: tuple[str, ...] = ("accounting", "noise_scale")
    point: tuple[float, float] = (1.0, 1e-5)


@dataclass(frozen=True)
class PolicyAudit:
    """How to audit one private policy end to end on one neighbouring pair."""

    name: str
    policy: str
    instance: dict[str, Any]
    pair: str = "reward"
    params: dict[str, Any] = field(default_factory=dict)
    paper_params: dict[str, Any] = field(default_factory=dict)
    t0: int = 0
    rewards: tuple[float, float] | None = None
    shifts: tuple[float, float] | None = None
    arm_norms: tuple[float, float] | None = None
    other_norm: float | None = None
    default_runs: int = 400
    trial: int = 0
    epsilon: float = 1.0
    delta: float = 1e-5
    modes: tuple[str, ...] = ("strict", "paper")
    paper_leaks: bool = False
    note: str = ""

    def __post_init__(self) -> None:
        if self.pair not in PAIRS:
            raise ConfigError(f"audit {self.name}: pair = {self.pair!r} is not allowed; "
                              f"allowed: {', '.join(PAIRS)}")

    def change(self) -> str:
        """One line describing how D0 and D1 differ."""
        parts = []
        if self.arm_norms is not None:
            parts.append(f"user {self.t0}'s arm norms {self.arm_norms[0]:g} vs "
                         f"{self.arm_norms[1]:g}")
        if self.other_norm is not None:
            parts.append(f"every other user's arms of norm {self.other_norm:g}")
        if self.rewards is not None:
            parts.append(f"user {self.t0}'s reward {self.rewards[0]:g} vs {self.rewards[1]:g}")
        if self.shifts is not None:
            parts.append("the first reward drawn moved to -BIG vs +BIG (clipped where the "
                         "policy clips)")
        return "; ".join(parts) or "nothing"


def reward_audit(policy: str, **kwargs: Any) -> PolicyAudit:
    """A reward pair on the small pool instance: user 0's reward 0 vs 1."""
    return PolicyAudit(name=f"{policy}@reward", policy=policy, instance=SMALL_POOL,
                       rewards=(0.0, 1.0), default_runs=400, **kwargs)


def elimination_reward_audit(policy: str) -> PolicyAudit:
    """A reward pair of a batched elimination: the first reward drawn moved to ∓BIG."""
    return PolicyAudit(
        name=f"{policy}@reward", policy=policy, instance=SMALL_LINEAR,
        params={"width_scale": 0.02}, paper_params={"path": "explicit"}, shifts=(-BIG, BIG),
        default_runs=400, epsilon=1.0, delta=1e-6, paper_leaks=True,
        note="width_scale 0.02 (post-processing) so that eliminations depend on the data; "
             "paper mode does not clip rewards (its ledger records a breach)")
