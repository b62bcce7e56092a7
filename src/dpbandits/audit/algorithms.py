"""End-to-end audits of private policies on neighbouring data sets (docs/audits.md).

The data set of a run is the trial's environment (contexts and reward stream); the randomness
audited is the policy's own stream, fresh in every run. D0 and D1 differ in one user's record:

- `reward` pairs (reward-private policies: the TS family, the episodic zCDP baselines,
  DGS-LinUCB and the eliminations) change only the user's reward, to the two extremes the
  policy's privacy argument allows (round loops: the reward of round t0; batched policies: the
  first reward drawn from the trial's stream, moved by ±BIG so that a clipped reward sits at
  its bound and an unclipped one is unbounded, as the model allows);
- `context` pairs (joint-DP or shuffle-DP policies whose contexts are private: Private-GLM,
  Shuffle-GLM, JDP-LinUCB) change the user's whole record: the norms of the arms offered to
  user t0 (and, where set, the reward).

The distinguisher sees only what later users see: the actions of the rounds after t0
(`dpbandits.audit.statistics`). Run i uses the same policy seed on D0 and D1, so
`transcript_changed` is the share of runs in which the change altered any later action at all;
0 means the pair has no visible effect and the audit is inconclusive.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbandits.audit.spec import AuditSamples, AuditSpec, PolicyAudit
from dpbandits.audit.statistics import Transcripts, crossfit_scores
from dpbandits.contract import FixedActionEnvironment, RoundEnvironment, RunResult
from dpbandits.errors import ConfigError
from dpbandits.instances.registry import build_instance
from dpbandits.policies.base import BatchedPolicy, Policy


def _rescaled(arms: np.ndarray, norm: float) -> np.ndarray:
    """Every arm (last axis) rescaled to the given Euclidean norm, directions kept."""
    arms = np.asarray(arms, dtype=float)
    norms = np.sqrt(np.sum(arms * arms, axis=-1, keepdims=True))
    return float(norm) * arms / np.maximum(norms, 1e-300)


class NeighbourEnvironment(RoundEnvironment):
    """A trial's round environment with user t0's record replaced.

    `arm_norm` rescales every arm offered at round t0 to that norm (directions kept);
    `reward` replaces the reward of round t0. Every other round is the base environment's,
    with its arms rescaled to norm `other_norm` when given (the same on both sides of a pair).
    """

    def __init__(self, base: RoundEnvironment, t0: int, reward: float | None = None,
                 arm_norm: float | None = None, other_norm: float | None = None) -> None:
        if not isinstance(base, RoundEnvironment):
            raise ConfigError(f"a neighbouring pair needs a round environment; got "
                              f"{type(base).__name__}")
        self.base = base
        self.info = base.info
        self.t0 = int(t0)
        self.reward = reward
        self.theta0 = base.theta0
        self.other_norm = other_norm
        self._arms_t0 = None if arm_norm is None else _rescaled(base.arms(self.t0), arm_norm)
        table = base.contexts
        if isinstance(table, np.ndarray) and (self._arms_t0 is not None
                                              or other_norm is not None):
            table = table if other_norm is None else _rescaled(table, other_norm)
            table = table.copy()
            table[self.t0] = self.arms(self.t0)
        self.contexts = table

    @property
    def horizon(self) -> int:
        return self.base.horizon

    def arms(self, t: int) -> np.ndarray:
        if t == self.t0:
            return self.base.arms(t) if self._arms_t0 is None else self._arms_t0
        arms = self.base.arms(t)
        return arms if self.other_norm is None else _rescaled(arms, self.other_norm)

    def pull(self, t: int, index: int) -> tuple[float, float]:
        reward, regret = self.base.pull(t, index)
        if t == self.t0 and self.reward is not None:
            reward = self.reward
        return reward, regret

    def outcome_tables(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The base environment's outcome tables with round t0's reward replaced, as `pull`
        gives them (so that audits play the policies' table rounds too)."""
        tables_of = getattr(self.base, "outcome_tables", None)
        outcomes = tables_of() if tables_of is not None else None
        if outcomes is None:
            return None
        rewards, regrets = outcomes
        if self.reward is not None:
            rewards = np.array(rewards, dtype=float)
            rewards[self.t0] = float(self.reward)
        return rewards, regrets

    def reference_rewards(self, regret: np.ndarray) -> dict[str, float]:
        return self.base.reference_rewards(regret)


class BatchedNeighbourEnvironment(FixedActionEnvironment):
    """A fixed-action environment whose reward stream has its `index`-th standard-normal draw
    moved by `shift` (the first reward a batched policy draws, i.e. one user's reward)."""

    def __init__(self, base: FixedActionEnvironment, shift: float, index: int = 0) -> None:
        if not isinstance(base, FixedActionEnvironment):
            raise ConfigError(f"a batched policy's pair needs a fixed-action environment; got "
                              f"{type(base).__name__}")
        self.base = base
        self.info = base.info
        self.actions = base.actions
        self.means = base.means
        self.noise_sd = base.noise_sd
        self.gaps = np.max(self.means) - self.means
        self.shift = float(shift)
        self.index = int(index)

    @property
    def horizon(self) -> int:
        return self.base.horizon

    def arms(self, t: int) -> np.ndarray:
        return self.base.arms(t)

    def pull(self, t: int, index: int) -> tuple[float, float]:
        raise NotImplementedError("the batched pair changes the reward stream; play_batched "
                                  "draws from noise_rng()")

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
        """The base stream's draws, one of them (the `index`-th overall) moved by `shift`."""
        out = self._rng.standard_normal(size)
        n = int(np.size(out))
        if self._drawn <= self._index < self._drawn + n:
            flat = np.atleast_1d(out).reshape(-1)
            flat[self._index - self._drawn] += self._shift
            out = flat.reshape(np.shape(out)) if np.ndim(out) else float(flat[0])
        self._drawn += n
        return out

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Any:
        """Refused: a per-batch reward sum cannot carry a one-round change."""
        raise NotImplementedError("per-batch reward sums cannot carry a one-round change; "
                                  "use the policy's explicit path")


def _actions_of(env: Any, result: RunResult, t0: int) -> np.ndarray:
    """Actions of rounds t0+1 … T−1, from the run's record or (batched) from the regret trace."""
    if result.actions is not None:
        picks = np.asarray(result.actions)
    else:
        gaps = np.asarray(env.gaps)
        regret = np.asarray(result.regret)
        match = np.abs(regret[:, None] - gaps[None, :]) <= 1e-12
        if not np.all(match.sum(axis=1) == 1):
            raise RuntimeError("actions cannot be recovered from the regret trace (equal gaps)")
        picks = np.argmax(match, axis=1)
    after = picks[t0 + 1:]
    if np.any(after < 0):
        raise RuntimeError("the run did not play every round")
    return after


def _summary_of(env: Any, actions: np.ndarray, t0: int) -> np.ndarray:
    """Per-arm counts after t0 for a fixed arm set, else the sum of the chosen features."""
    if isinstance(env, FixedActionEnvironment):
        return np.bincount(actions, minlength=np.asarray(env.actions).shape[0]).astype(float)
    total = np.zeros(env.info.d)
    for offset, i in enumerate(actions):
        total += env.arms(t0 + 1 + offset)[int(i)]
    return total


def _probe(policy: Policy, t0: int) -> dict[str, float]:
    """Per-run facts worth reporting: Criterion I at t0 and warm-up fits (Private-GLM)."""
    out: dict[str, float] = {}
    times = getattr(policy, "warmup_times", None)
    if times is not None:
        out["criterion1_at_t0"] = float(t0 in times)
        out["warmup_fits"] = float(getattr(policy, "n1", 0))
    return out


def _environment(audit: PolicyAudit, instance: Any, side: int, batched: bool) -> Any:
    """Side `side` (0 or 1) of the audit's pair on a fresh environment of its trial."""
    base = instance.environment(audit.trial)
    if batched:
        if audit.shifts is None:
            raise ConfigError(f"audit {audit.name}: a batched policy's pair needs shifts")
        return BatchedNeighbourEnvironment(base, audit.shifts[side])
    reward = None if audit.rewards is None else audit.rewards[side]
    norm = None if audit.arm_norms is None else audit.arm_norms[side]
    return NeighbourEnvironment(base, audit.t0, reward=reward, arm_norm=norm,
                                other_norm=audit.other_norm)


def policy_samples(
    audit: PolicyAudit,
    epsilon: float,
    delta: float,
    runs: int,
    rng: np.random.Generator,
    accounting: str = "strict",
    cls: type[Policy] | None = None,
    confidence: float = 0.95,
) -> AuditSamples:
    """Run the policy `runs` times on each side of the pair and score what later users see.

    The claim audited is the policy's budget (ε, δ); the largest ε its ledger reports over the
    runs (∞ when it records a breach) is kept in `info["ledger_epsilon"]`.
    """
    cls = _policy_class(audit.policy) if cls is None else cls
    instance = build_instance(dict(audit.instance))
    params = {**audit.params, **(audit.paper_params if accounting == "paper" else {})}
    batched = issubclass(cls, BatchedPolicy)
    seeds = rng.integers(0, 2**63 - 1, size=runs)
    sides: list[Transcripts] = []
    ledger_eps: list[float] = []
    breaches: set[str] = set()
    probes: list[dict[str, list[float]]] = []
    for side in (0, 1):
        actions, summaries = [], []
        probe: dict[str, list[float]] = {}
        for seed in seeds:
            env = _environment(audit, instance, side, batched)
            policy = cls(instance.info, np.random.default_rng(seed), epsilon=epsilon,
                         delta=delta, accounting=accounting, **params)
            result = policy.run(env)
            acts = _actions_of(env, result, audit.t0)
            actions.append(acts)
            summaries.append(_summary_of(env, acts, audit.t0))
            for key, value in _probe(policy, audit.t0).items():
                probe.setdefault(key, []).append(value)
            if policy.ledger is not None:
                ledger_eps.append(policy.ledger.spent()[0])
                breaches.update(policy.ledger.breaches)
        sides.append(Transcripts(np.vstack(actions), np.vstack(summaries)))
        probes.append(probe)
    changed = float(np.mean(np.any(sides[0].actions != sides[1].actions, axis=1)))
    scores0, scores1, statistic = crossfit_scores(sides[0], sides[1], delta, confidence)
    info: dict[str, float] = {
        "transcript_changed": changed,
        "ledger_epsilon": float(max(ledger_eps)) if ledger_eps else math.nan,
        "ledger_breaches": float(len(breaches)),
    }
    for side, probe in enumerate(probes):
        for key, values in probe.items():
            info[f"{key}_d{side}"] = float(np.mean(values))
    instance_text = ", ".join(f"{k} = {v}" for k, v in audit.instance.items()
                              if k not in ("generator", "seed"))
    return AuditSamples(
        scores0=scores0,
        scores1=scores1,
        claimed_epsilon=float(epsilon),
        delta=float(delta),
        pair=f"{cls.name} on {audit.instance.get('generator')} ({instance_text}); "
             f"{audit.change()}",
        statistic=f"{statistic} (cross-fitted on the selection half)",
        info=info,
        vacuous=changed == 0.0,
    )



def policy_audits() -> dict[str, PolicyAudit]:
    """Every end-to-end audit the registered policies declare (`Policy.audits`), by name."""
    from dpbandits.policies import POLICIES

    out: dict[str, PolicyAudit] = {}
    for name, cls in POLICIES.items():
        for audit in cls.audits:
            if audit.policy != name:
                raise ConfigError(f"audit {audit.name} of {name} names policy {audit.policy!r}")
            out[audit.name] = audit
    return dict(sorted(out.items()))


def policy_audit_spec(audit: PolicyAudit) -> AuditSpec:
    """The runnable audit of a policy's declared pair."""
    def sampler(epsilon: float, delta: float, runs: int, rng: np.random.Generator, *,
                accounting: str = "strict", confidence: float = 0.95) -> AuditSamples:
        return policy_samples(audit, epsilon, delta, runs, rng, accounting,
                              confidence=confidence)

    sampler.__doc__ = f"End-to-end audit {audit.name}."
    return AuditSpec(audit.name, "algorithm", sampler, audit.default_runs,
                     f"{audit.policy} end to end, {audit.pair} pair: {audit.change()}",
                     options=("accounting",), point=(audit.epsilon, audit.delta))


def _policy_class(name: str) -> type[Policy]:
    """The registered policy class called `name`."""
    from dpbandits.policies import get_policy_class

    return get_policy_class(name)


def unaudited_private_policies() -> list[str]:
    """Private policies in the registry that have no end-to-end audit configured."""
    from dpbandits.policies import POLICIES

    audited = {a.policy for a in policy_audits().values()}
    return sorted(n for n, c in POLICIES.items() if c.private and n not in audited)


def context_private_policies() -> list[str]:
    """Policies audited with a whole-record (context) pair."""
    return sorted({a.policy for a in policy_audits().values() if a.pair == "context"})
