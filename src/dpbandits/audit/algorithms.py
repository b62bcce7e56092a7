"""End-to-end audits of private policies: neighbouring reward streams differing in one round.

The reward stream is fixed (it is the data set); the randomness audited is the policy's own
stream, fresh in every run. D0 and D1 differ only in the reward of one round, set to the two
extremes the policy's privacy argument allows. The distinguisher sees only the chosen actions:
their per-arm counts after the changed round (fixed arm sets) or the sum of the chosen feature
vectors (fresh contexts), projected on the direction estimated from the selection half.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpbandits.audit.bounds import linear_statistic
from dpbandits.audit.registry import AuditSamples, register_audit
from dpbandits.instances.registry import build_instance
from dpbandits.policies.base import REGISTRY, Policy

BIG = 1e12


class NeighbourEnvironment:
    """A trial's environment with the reward of round `t0` replaced, recording played arms.

    Round-loop policies see the replaced reward through `pull`; batched policies that draw the
    trial's reward stream themselves (`noise_rng`) get a stream whose `index`-th standard-normal
    draw is shifted by `shift` (±BIG saturates a clipped reward at its bound).
    """

    def __init__(
        self,
        base: Any,
        t0: int,
        reward: float | None,
        shift: float = 0.0,
        index: int = 0,
    ) -> None:
        self.base = base
        self.info = base.info
        self.t0 = t0
        self.reward = reward
        self.shift = shift
        self.index = index
        self.played: list[tuple[int, int]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)

    @property
    def horizon(self) -> int:
        return self.base.horizon

    def arms(self, t: int) -> np.ndarray:
        return self.base.arms(t)

    def pull(self, t: int, index: int) -> tuple[float, float]:
        reward, regret = self.base.pull(t, index)
        self.played.append((t, index))
        if t == self.t0 and self.reward is not None:
            reward = self.reward
        return reward, regret

    def noise_rng(self) -> ShiftedNormalStream:
        return ShiftedNormalStream(self.base.noise_rng(), self.index, self.shift)


class ShiftedNormalStream:
    """A Generator proxy whose `index`-th standard-normal output is shifted by `shift`."""

    def __init__(self, rng: np.random.Generator, index: int, shift: float) -> None:
        self._rng = rng
        self._index = index
        self._shift = shift
        self._drawn = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rng, name)

    def standard_normal(self, size: Any = None) -> Any:
        out = self._rng.standard_normal(size)
        n = int(np.size(out))
        if self._drawn <= self._index < self._drawn + n:
            flat = np.atleast_1d(out).reshape(-1)
            flat[self._index - self._drawn] += self._shift
            out = flat.reshape(np.shape(out)) if np.ndim(out) else float(flat[0])
        self._drawn += n
        return out

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Any:
        raise NotImplementedError("per-batch reward sums cannot carry a one-round change; "
                                  "use the policy's explicit path")


@dataclass(frozen=True)
class PolicyAudit:
    """How to audit one private policy end to end."""

    policy: str
    instance: dict[str, Any]
    params: dict[str, Any] = field(default_factory=dict)
    paper_params: dict[str, Any] = field(default_factory=dict)
    t0: int = 0
    rewards: tuple[float, float] | None = (0.0, 1.0)
    shifts: dict[str, tuple[float, float]] = field(default_factory=dict)
    default_runs: int = 2000
    trial: int = 0
    epsilon: float = 1.0
    delta: float = 1e-5


def _features(env: NeighbourEnvironment, result: Any, t0: int) -> np.ndarray:
    """Per-arm counts after t0 for a fixed arm set, else Σ_{t>t0} x_{t,a_t}."""
    fixed = getattr(env.base, "actions", None)
    if env.played:
        rounds = np.array([t for t, _ in env.played])
        picks = np.array([i for _, i in env.played])
    else:
        gaps = np.asarray(env.base.gaps)
        regret = np.asarray(result.regret)
        match = np.abs(regret[:, None] - gaps[None, :]) <= 1e-12
        if not np.all(match.sum(axis=1) == 1):
            raise RuntimeError("actions cannot be recovered from the regret trace (equal gaps)")
        picks = np.argmax(match, axis=1)
        rounds = np.arange(regret.size)
    after = rounds > t0
    if fixed is not None:
        return np.bincount(picks[after], minlength=np.asarray(fixed).shape[0]).astype(float)
    dim = env.info.d
    total = np.zeros(dim)
    for t, i in zip(rounds[after], picks[after], strict=True):
        total += env.base.arms(int(t))[int(i)]
    return total


def policy_samples(
    audit: PolicyAudit,
    epsilon: float,
    delta: float,
    runs: int,
    rng: np.random.Generator,
    accounting: str = "strict",
    cls: type[Policy] | None = None,
) -> AuditSamples:
    """Run the policy `runs` times on each neighbouring stream; score the action transcripts.

    Run i uses the same policy seed on D0 and D1, so `info["transcript_changed"]` is the share
    of runs whose transcript the changed reward altered at all (0 means the pair has no effect
    on this instance and the audit cannot see anything). Each side's runs are still i.i.d., which
    is all the per-side Clopper–Pearson bounds need. The claim audited is the policy's budget
    (ε, δ); the largest ε its ledger reports is kept in `info`.
    """
    cls = REGISTRY[audit.policy] if cls is None else cls
    instance = build_instance(dict(audit.instance))
    params = {**audit.params, **(audit.paper_params if accounting == "paper" else {})}
    seeds = rng.integers(0, 2**63 - 1, size=runs)
    features: list[np.ndarray] = []
    spent = [0.0]
    for side in (0, 1):
        rows = []
        for seed in seeds:
            base = instance.environment(audit.trial)
            reward = None if audit.rewards is None else audit.rewards[side]
            shift = audit.shifts.get(accounting, (0.0, 0.0))[side]
            env = NeighbourEnvironment(base, audit.t0, reward, shift=shift)
            policy: Policy = cls(
                instance.info, np.random.default_rng(seed), epsilon=epsilon, delta=delta,
                accounting=accounting, **params,
            )
            result = policy.run(env)
            rows.append(_features(env, result, audit.t0))
            if policy.ledger is not None:
                spent.append(policy.ledger.spent()[0])
        features.append(np.vstack(rows))
    changed = float(np.mean(np.any(features[0] != features[1], axis=1)))
    scores0, scores1 = linear_statistic(features[0], features[1])
    if audit.rewards is not None:
        change = f"reward of round {audit.t0}: {audit.rewards[0]:g} vs {audit.rewards[1]:g}"
    else:
        low, high = audit.shifts.get(accounting, (0.0, 0.0))
        change = (f"first drawn reward clipped to its bounds (shift {low:g} vs {high:g} sd)"
                  if abs(low) >= BIG else f"first drawn reward vs the same + {high:g} sd")
    return AuditSamples(
        scores0=scores0,
        scores1=scores1,
        claimed_epsilon=float(epsilon),
        delta=float(delta),
        pair=f"{cls.name} on {audit.instance.get('generator')} (T = "
        f"{audit.instance.get('horizon')}); {change}",
        statistic="actions after the changed round, projected (Fisher direction)",
        info={"ledger_epsilon_max": float(max(spent)), "transcript_changed": changed},
    )


def linear_shifts(sensitivity: float = 1.0, sd: float = 1.0) -> dict[str, tuple[float, float]]:
    """Reward shifts of a linear-Gaussian stream: strict clips ±BIG to ±B; paper moves by Δ."""
    return {"strict": (-BIG, BIG), "paper": (0.0, sensitivity / sd)}


SMALL_LINEAR = {"generator": "linear_sphere", "K": 4, "d": 2, "horizon": 400, "seed": 3}
SMALL_POOL = {"generator": "logistic_pool", "d": 3, "n_arms": 10, "K": 3, "horizon": 60,
              "S": 2.0, "seed": 1}
SMALL_GLM = {"generator": "glm_ball", "family": "probit", "d": 2, "K": 5, "S": 2.0,
             "horizon": 200, "seed": 1}

POLICY_AUDITS: dict[str, PolicyAudit] = {
    **{
        name: PolicyAudit(
            policy=name,
            instance=SMALL_LINEAR,
            paper_params={"path": "explicit"},
            rewards=None,
            shifts=linear_shifts(),
            default_runs=500,
            epsilon=1.0,
            delta=1e-6,
        )
        for name in ("CentralDPElimination", "LocalDPElimination", "ShuffleDPElimination")
    },
    **{
        name: PolicyAudit(
            policy=name,
            instance=SMALL_POOL,
            params={"B": 10} if name.startswith("AdaPrivate") else {},
            default_runs=500,
        )
        for name in (
            "AdaPrivate-TS", "AdaPrivate-TS-Amp", "AdaPrivate-TS-Adaptive", "AdaPrivate-UCB",
            "JDP-LinUCB", "DGS-LinUCB", "zCDP-Episodic", "RarelySwitching-zCDP",
            "AdaC-OFUL-zCDP",
        )
    },
    "Private-GLM": PolicyAudit("Private-GLM", SMALL_GLM, default_runs=300, epsilon=4.0,
                               delta=0.02),
    "Shuffle-GLM": PolicyAudit("Shuffle-GLM", {**SMALL_GLM, "horizon": 100}, default_runs=200,
                               epsilon=4.0, delta=0.02),
}


def _register_policy_audits() -> None:
    from dpbandits.policies import load_all

    load_all()
    for name, audit in sorted(POLICY_AUDITS.items()):
        if name not in REGISTRY:
            continue

        def sampler(
            epsilon: float,
            delta: float,
            runs: int,
            rng: np.random.Generator,
            *,
            accounting: str = "strict",
            _audit: PolicyAudit = audit,
        ) -> AuditSamples:
            return policy_samples(_audit, epsilon, delta, runs, rng, accounting)

        sampler.__doc__ = f"End-to-end audit of {name}."
        register_audit(
            name,
            "algorithm",
            default_runs=audit.default_runs,
            description=f"{name} end to end on {audit.instance['generator']} "
            f"(T = {audit.instance['horizon']})",
            options=("accounting",),
        )(sampler)


def unaudited_private_policies() -> list[str]:
    """Private policies in the registry that have no end-to-end audit configured."""
    from dpbandits.policies import load_all

    load_all()
    return sorted(n for n, c in REGISTRY.items() if c.private and n not in POLICY_AUDITS)


_register_policy_audits()
