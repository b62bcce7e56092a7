"""White-box release checks: neighbouring inputs through a private policy, release by release.

Each pair runs the policy twice with the same seed: first on D0, recording every release
(`privacy.release.recording`), then on D1 replaying D0's released values, so that both runs see
the same outputs and differ only in the data. At every release the two pre-noise statistics
must be no farther apart than the declared sensitivity (deterministic: one violation fails).
The first run's records are also checked against its ledger (each entry prices the scale drawn)
and against the noise they carry (the residuals released − statistic have the spread the
ledger states). docs/audits.md, "Release checks".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dpbandits.audit import release_cases_batched
from dpbandits.contract import ProblemInfo
from dpbandits.errors import PrivacyBudgetError
from dpbandits.policies import make_policy
from dpbandits.privacy.ledger import PrivacyLedger
from dpbandits.privacy.release import (
    ReleaseRecord,
    gaussian_rho,
    laplace_epsilon,
    recording,
    vector_sum_cost,
)

# Float sums of the two runs may round differently: a few ulps of the statistic's size.
ROUNDING = 1e-9
NOISE_FALSE_ALARM = 1e-6  # per tail and release name, of the residual spread test
NOISE_MIN_COORDINATES = 20  # fewer pooled coordinates: the spread test has no power (skipped)
EPSILON, DELTA = 1.0, 1e-5


@dataclass(frozen=True)
class Pair:
    """Neighbouring inputs: user t0's reward r0 vs r1, its arms' norms n0 vs n1."""

    relation: str
    t0: int
    rewards: tuple[float, float]
    norms: tuple[float, float] = (1.0, 1.0)

    def label(self) -> str:
        """One line naming the change."""
        parts = [f"user {self.t0}'s reward {self.rewards[0]:g} vs {self.rewards[1]:g}"]
        if self.norms != (1.0, 1.0):
            parts.append(f"arm norms {self.norms[0]:g} vs {self.norms[1]:g}")
        return f"{self.relation}: " + ", ".join(parts)


@dataclass(frozen=True)
class PolicyCase:
    """A private policy on a small instance, with the neighbour relations it claims and how
    its pairs are chosen (`pairs`), built (`instance`) and run (`play`)."""

    policy: str
    params: dict[str, float]
    relations: tuple[str, ...]
    d: int = 3
    K: int = 4
    horizon: int = 40
    pairs: Callable[[PolicyCase, int], list[tuple[int, Pair]]] = field(
        default=lambda case, seeds: reward_pairs(case, seeds), compare=False)
    instance: Callable[[PolicyCase, Pair, int, int], tuple[np.ndarray, np.ndarray]] = field(
        default=lambda case, pair, side, seed: linear_instance(case, pair, side, seed),
        compare=False)
    play: Callable[..., tuple[list[ReleaseRecord], PrivacyLedger]] = field(
        default=lambda *args, **kwargs: play_rounds(*args, **kwargs), compare=False)
    paper_relations: tuple[str, ...] | None = None  # paper mode claims fewer (its ledger says)


def reward_pairs(case: PolicyCase, seeds: int) -> list[tuple[int, Pair]]:
    """(seed, pair), `seeds` rounds of every pair: every fourth user, a batch's last (9) and
    the run's last; rewards at the clipping bounds, out of range, and with arms of norm 5."""
    users = sorted({*range(0, case.horizon, 4), 9, case.horizon - 1})
    kinds = [("reward", (0.0, 1.0), (1.0, 1.0)), ("reward", (-3.0, 4.0), (1.0, 1.0)),
             ("reward", (0.0, 1.0), (5.0, 5.0))]
    chosen = [Pair(relation, t0, rewards, norms) for relation, rewards, norms in kinds
              if relation in case.relations for t0 in users]
    # a seed of its own for every pair: the noise pooled by `noise_violations` is independent
    return [(seed * len(chosen) + k, pair) for seed in range(seeds)
            for k, pair in enumerate(chosen)]


def record_pairs(case: PolicyCase, seeds: int) -> list[tuple[int, Pair]]:
    """(seed, pair) as `reward_pairs`, for a joint-DP policy: user t0's whole record (its arms
    redrawn, rewards 0 vs 1 and −3 vs 4 with arms of norm 5 on one side) and its reward
    alone (0 vs 1, −3 vs 4)."""
    users = sorted({*range(0, case.horizon, 4), 9, case.horizon - 1})
    kinds = [("record", (0.0, 1.0), (1.0, 1.0)), ("record", (-3.0, 4.0), (1.0, 5.0)),
             ("reward", (0.0, 1.0), (1.0, 1.0)), ("reward", (-3.0, 4.0), (1.0, 1.0))]
    chosen = [Pair(relation, t0, rewards, norms) for relation, rewards, norms in kinds
              if relation in case.relations for t0 in users]
    return [(seed * len(chosen) + k, pair) for seed in range(seeds)
            for k, pair in enumerate(chosen)]


def record_instance(case: PolicyCase, pair: Pair, side: int,
                    seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`linear_instance`, user t0's arms redrawn on side 1 of a "record" pair."""
    arms, rewards = linear_instance(case, Pair(pair.relation, pair.t0, pair.rewards), side,
                                    seed)
    if pair.relation == "record" and side == 1:
        other = np.random.default_rng([seed, 42, pair.t0]).standard_normal((case.K, case.d))
        arms[pair.t0] = other / np.linalg.norm(other, axis=1, keepdims=True)
    arms[pair.t0] *= pair.norms[side]
    return arms, rewards


def play_glm(case: PolicyCase, accounting: str, arms: np.ndarray, rewards: np.ndarray,
             seed: int, replay: list[ReleaseRecord] | None = None
             ) -> tuple[list[ReleaseRecord], PrivacyLedger]:
    """`play_rounds` for a GLM policy (probit, public κ bounds; `epsilon` and `S` (default 4)
    in the case's params)."""
    from dpbandits.links import get_link

    params = dict(case.params)
    epsilon = float(params.pop("epsilon", EPSILON))
    radius = float(params.pop("S", 4.0))
    link = get_link("probit")
    kappa = link.kappa_public(radius)
    info = ProblemInfo("probit", case.d, case.K, case.horizon, radius, 1.0, kappa=kappa,
                       kappa_star=link.kappa_star_public, kappa_pub=kappa,
                       kappa_star_pub=link.kappa_star_public)
    policy = make_policy(case.policy, info, np.random.default_rng(seed), epsilon=epsilon,
                         delta=0.02, accounting=accounting, **params)
    return drive(policy, case, arms, rewards, replay)


def linear_instance(case: PolicyCase, pair: Pair, side: int,
                    seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(contexts (T, K, d) of unit norm, rewards (T, K) in [0, 1]) of side 0 or 1 of `pair`."""
    g = np.random.default_rng([seed, 41])
    arms = g.standard_normal((case.horizon, case.K, case.d))
    arms /= np.linalg.norm(arms, axis=2, keepdims=True)
    rewards = g.random((case.horizon, case.K))
    arms[pair.t0] *= pair.norms[side]
    rewards[pair.t0] = pair.rewards[side]
    return arms, rewards


def play_rounds(case: PolicyCase, accounting: str, arms: np.ndarray, rewards: np.ndarray,
                seed: int, replay: list[ReleaseRecord] | None = None
         ) -> tuple[list[ReleaseRecord], PrivacyLedger]:
    """Every release of one run of the policy (round by round, `select`/`update`)."""
    info = ProblemInfo("linear", case.d, case.K, case.horizon, 1.0)
    policy = make_policy(case.policy, info, np.random.default_rng(seed), epsilon=EPSILON,
                         delta=DELTA, accounting=accounting, **case.params)
    return drive(policy, case, arms, rewards, replay)


def drive(policy: Any, case: PolicyCase, arms: np.ndarray, rewards: np.ndarray,
          replay: list[ReleaseRecord] | None) -> tuple[list[ReleaseRecord], PrivacyLedger]:
    """Every release of the policy's rounds (`prepare_arms`, `select`, `update`), recorded."""
    with recording(replay) as recorder:
        for t in range(case.horizon):
            prepared = policy.prepare_arms(arms[t])
            i = policy.select(t, prepared)
            policy.update(t, prepared[i], float(rewards[t, i]))
        policy.finish()
    assert policy.ledger is not None
    return recorder.records, policy.ledger


def distance(a: np.ndarray, b: np.ndarray, norm: str) -> float:
    """‖a − b‖ in the release's norm (ℓ1 or ℓ2)."""
    diff = (np.asarray(a) - np.asarray(b)).ravel()
    return float(np.abs(diff).sum() if norm == "l1" else np.sqrt(diff @ diff))


def sensitivity_violations(where: str, first: list[ReleaseRecord],
                           second: list[ReleaseRecord]) -> list[str]:
    """Releases whose pre-noise statistics on D0 and D1 differ by more than declared."""
    if [r.name for r in first] != [r.name for r in second]:
        return [f"{where}: the neighbouring run made other releases "
                f"({len(first)} vs {len(second)})"]
    out = []
    for a, b in zip(first, second, strict=True):
        gap = distance(a.statistic, b.statistic, a.norm)
        size = max(float(np.abs(a.statistic).sum()), float(np.abs(b.statistic).sum()))
        if gap > a.sensitivity + ROUNDING * (1.0 + size):
            out.append(f"{where}: release '{a.name}' #{a.index} ({a.partition}): pre-noise "
                       f"statistics {gap:.6g} apart in {a.norm} > declared sensitivity "
                       f"{a.sensitivity:.6g}")
    return out


def changed_violations(where: str, first: list[ReleaseRecord],
                       second: list[ReleaseRecord]) -> list[str]:
    """Releases declaring that a neighbour moves at most `changed` coordinates (their snapping
    priced for that many) whose statistics on D0 and D1 differ in more."""
    out = []
    for a, b in zip(first, second, strict=False):
        if a.changed is None or np.shape(a.statistic) != np.shape(b.statistic):
            continue
        size = np.maximum(np.abs(a.statistic), np.abs(b.statistic))
        moved = int(np.count_nonzero(np.abs(a.statistic - b.statistic) > ROUNDING * (1 + size)))
        if moved > a.changed:
            out.append(f"{where}: release '{a.name}' #{a.index} ({a.partition}): pre-noise "
                       f"statistics differ in {moved} coordinates > declared {a.changed}")
    return out


def ledger_violations(where: str, records: list[ReleaseRecord],
                      ledger: PrivacyLedger) -> list[str]:
    """Entries that do not price the scale drawn, and a strict ledger over its budget."""
    out = []
    for r in records:
        entry, drawn = r.entry, r.drawn
        if entry is None:
            continue
        need = (gaussian_rho(drawn) if drawn.mechanism == "gaussian"
                else vector_sum_cost(drawn)["epsilon"] if drawn.mechanism == "vector-sum"
                else laplace_epsilon(drawn))
        stated = entry.rho if entry.rho is not None else entry.epsilon
        # an entry of `count` merged releases states the smallest scale drawn of any
        scaled = (entry.noise_scale == drawn.scale if entry.count == 1
                  else entry.noise_scale <= drawn.scale)
        priced = scaled and drawn.sensitivity >= r.sensitivity
        # a plain Gaussian or Laplace release, or a vector sum (N of them cost at least one)
        if entry.mechanism == drawn.mechanism or drawn.mechanism == "vector-sum":
            priced = priced and stated is not None and stated >= need * (1 - ROUNDING)
        if not priced:
            out.append(f"{where}: release '{r.name}' #{r.index}: ledger states noise "
                       f"{entry.noise_scale:.6g} and cost {stated!r}; the noise drawn at "
                       f"{drawn.scale:.6g} costs {need:.6g}")
    try:
        ledger.check()
    except PrivacyBudgetError as exc:
        worst = max(records, default=None,
                    key=lambda r: (r.entry.rho or r.entry.epsilon or 0.0) if r.entry else 0.0)
        name = f"release '{worst.name}' ({worst.partition})" if worst else "no release"
        out.append(f"{where}: {exc}; costliest: {name}")
    return out


def noise_violations(where: str, records: Iterable[ReleaseRecord]) -> list[str]:
    """Release names whose pooled noise (released − statistic) does not have the spread the
    ledger states: Σ(e/σ)² against χ²_n (Gaussian), Σ|e|/b against Gamma(n) (Laplace),
    each tail at NOISE_FALSE_ALARM."""
    from scipy import stats

    pooled: dict[tuple[str, str], list[np.ndarray]] = {}
    freedom: dict[tuple[str, str], int] = {}
    for r in records:
        if r.drawn.scale > 0:
            residual = (r.released - r.statistic).ravel() / r.drawn.scale
            key = (r.name, r.drawn.mechanism)
            pooled.setdefault(key, []).append(residual)
            freedom[key] = freedom.get(key, 0) + (r.freedom or residual.size)
    out = []
    for (name, mechanism), parts in pooled.items():
        z = np.concatenate(parts)
        n = freedom[(name, mechanism)]  # a symmetric node's Σ(e/σ)² is χ² with d(d+1)/2
        if n < NOISE_MIN_COORDINATES:
            continue
        if mechanism in ("gaussian", "vector-sum"):  # P_vec: Binomial(n·b, p), near-Gaussian
            value, law = float(z @ z), stats.chi2(n)
            spread = math.sqrt(value / n)
        else:
            value, law = float(np.abs(z).sum()), stats.gamma(n)
            spread = value / n
        if not law.ppf(NOISE_FALSE_ALARM) <= value <= law.isf(NOISE_FALSE_ALARM):
            out.append(f"{where}: release '{name}': the noise drawn has {spread:.4g} × the "
                       f"scale its ledger states ({n} coordinates)")
    return out


# The TS family claims reward privacy only: contexts are public (A is never noised).
CASES: tuple[PolicyCase, ...] = (
    PolicyCase("AdaPrivate-TS", {"B": 10}, ("reward",)),
    PolicyCase("AdaPrivate-TS-Amp", {"B": 10}, ("reward",)),
    PolicyCase("AdaPrivate-TS-Adaptive", {"B": 10}, ("reward",)),
    PolicyCase("AdaPrivate-UCB", {"B": 10}, ("reward",)),
    # The batched eliminations: a user's reward (Hanna et al., Algorithms 1–3).
    *release_cases_batched.elimination_cases(),
    # Shuffle-GLM: a user's context and reward (docs/glm.md, "Algorithm 1").
    release_cases_batched.shuffle_glm_case(),
    # Joint DP: a user's whole record (its arms and reward). Private-GLM at ε = 8, S = 3, most
    # of the warm-up budget on the counter: Criterion I fires in most rounds (the H tree gets
    # the others' leaves) and the counter triggers all c₁ = 6 θ_w fits in every run
    # (docs/audits.md, "Release checks"); paper mode claims only a reward change (its ledger
    # records the breach for contexts).
    PolicyCase("Private-GLM", {"epsilon": 8.0, "S": 3.0, "counter_share": 0.9, "zeta": 0.5},
               ("record", "reward"), d=2, K=5, pairs=lambda c, s: record_pairs(c, s),
               instance=lambda c, p, side, s: record_instance(c, p, side, s),
               play=lambda *a, **k: play_glm(*a, **k), paper_relations=("reward",)),
    PolicyCase("JDP-LinUCB", {}, ("record", "reward"), pairs=lambda c, s: record_pairs(c, s),
               instance=lambda c, p, side, s: record_instance(c, p, side, s)),
)

# The zCDP linear baselines claim reward privacy only too (docs/ts.md, "Setting and privacy
# model"). zCDP-Episodic's θ̂ releases see an unclipped arm x only in episodes with
# λ_min(A^(ℓ)) > 4 (x enters A^(ℓ) as well: ‖(A^(ℓ))⁻¹x‖ ≤ 1/(2√λ_min)), which d = 2 and
# T = 80 reach (docs/audits.md, "Release checks").
ZCDP_LINEAR_CASES: tuple[PolicyCase, ...] = (
    PolicyCase("DGS-LinUCB", {}, ("reward",)),
    PolicyCase("zCDP-Episodic", {}, ("reward",), d=2, horizon=80),
    PolicyCase("RarelySwitching-zCDP", {}, ("reward",)),
    PolicyCase("AdaC-OFUL-zCDP", {}, ("reward",)),
)
CASES += ZCDP_LINEAR_CASES


@dataclass
class CheckReport:
    """What the release checks ran and every violation found."""

    pairs: int = 0
    releases: int = 0
    policies: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)


def check_case(case: PolicyCase, accounting: str = "strict", seeds: int = 3,
               report: CheckReport | None = None) -> CheckReport:
    """Every pair of `case` in one accounting mode; the report of what failed."""
    report = report if report is not None else CheckReport()
    report.policies.append(f"{case.policy} [{accounting}]")
    if accounting == "paper" and case.paper_relations is not None:
        case = replace(case, relations=case.paper_relations)
    drawn: list[ReleaseRecord] = []
    for seed, pair in case.pairs(case, seeds):
        where = f"{case.policy} [{accounting}] seed {seed}, {pair.label()}"
        first, ledger = case.play(case, accounting, *case.instance(case, pair, 0, seed), seed)
        second, _ = case.play(case, accounting, *case.instance(case, pair, 1, seed), seed,
                              replay=first)
        report.pairs += 1
        report.releases += len(first)
        report.violations += sensitivity_violations(where, first, second)
        report.violations += changed_violations(where, first, second)
        report.violations += ledger_violations(where, first, ledger)
        drawn.extend(first)
    report.violations += noise_violations(f"{case.policy} [{accounting}]", drawn)
    return report
