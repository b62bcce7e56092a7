"""Batched elimination on G-optimal core sets: non-private, central, local and shuffled DP.

Hanna, Girgis, Fragouli, Diggavi, "Differentially Private Stochastic Linear Bandits: (Almost)
for Free" (Algorithms 1–3, Sections 3–5; docs/linear.md). Within a batch the policy is
fixed, so a run draws one reward sum (and one noise sum) per (batch, action): exact and fast.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from dpbandits.audit.spec import PolicyAudit, elimination_reward_audit
from dpbandits.contract import FixedActionEnvironment, ProblemInfo
from dpbandits.design import check_points, compute_design
from dpbandits.errors import ConfigError
from dpbandits.params import Declaration, choice, number
from dpbandits.policies.base import BatchedPolicy
from dpbandits.privacy.amplification import BOUNDS, amplified_epsilon, local_epsilon
from dpbandits.privacy.exact_noise import Noise, NumpyNoise, noise_for
from dpbandits.privacy.laplace import clip_rewards, laplace_scale, laplace_sum
from dpbandits.privacy.ledger import PrivacyLedger
from dpbandits.privacy.release import Drawn, drawn_cost, drawn_for, release
from dpbandits.privacy.shuffler import Shuffler, per_action_sums

MODES = ("nonprivate", "central", "local", "shuffled")
PATHS = ("fast", "explicit")


def batch_schedule(horizon: int) -> tuple[float, int]:
    """q = (2T)^{1/ln T} and M = ⌊ln T⌋ − 1 exploration batches, at least one.

    Hanna et al., Section 3 and its footnote 1; the floor of ln T is ours (docs/linear.md).
    """
    if horizon < 1:
        raise ConfigError(f"horizon = {horizon!r} is not allowed; must be an integer >= 1")
    if horizon < 3:
        return math.e, 1
    log_t = math.log(horizon)
    return (2.0 * horizon) ** (1.0 / log_t), max(1, math.floor(log_t) - 1)


def batch_counts(weights: np.ndarray, q_i: float, remaining: int) -> np.ndarray:
    """n_{i,a} = ⌈π(a) q^i⌉ on the support, truncated in support order to the horizon.

    The counts of Hanna et al., Section 3; the truncation at the horizon is ours.
    """
    counts = np.where(weights > 0, np.ceil(weights * q_i), 0.0).astype(np.int64)
    total = np.cumsum(counts)
    if total[-1] > remaining:
        counts = np.clip(remaining - (total - counts), 0, counts)
    return counts


def sub_gaussian_width(sigma: float, d: int, log_term: float, q_i: float) -> float:
    """base_i = σ √(4 d L_T / q^i) (our derivation: docs/linear.md, "Widths")."""
    return sigma * math.sqrt(4.0 * d * log_term / q_i)


def laplace_sum_width(scale: float, d: int, log_term: float, q_i: float) -> float:
    """Bernstein width of per-reward Laplace(b) noise: b(√(16 d L_T/q^i) + 8 d L_T/q^i).

    Our derivation (docs/linear.md, "Widths"); the paper's γ_i is not printed in our copy.
    """
    return scale * (math.sqrt(16.0 * d * log_term / q_i) + 8.0 * d * log_term / q_i)


def central_width(scale: float, d: int, core: int, q_i: float, batches: int, horizon: int) -> float:
    """Width of one Laplace(Δ/ε) per core action: 2 d |C| (Δ/ε)/q^i · ln(2|C| M T).

    Our derivation (docs/linear.md, "Widths"); the paper's γ_i is not printed in our copy.
    """
    return 2.0 * d * core * scale / q_i * math.log(2.0 * core * batches * horizon)


def leader(estimate: np.ndarray) -> int:
    """The active arm of largest estimated reward ⟨x, θ̂⟩ (the first of equals), by its position
    among the active arms: elimination keeps the arms close to it and the exploit phase commits
    to it (Hanna et al., Algorithms 1–3; Lattimore & Szepesvári, Ch. 22)."""
    return int(np.argmax(estimate))


def eliminate(x: np.ndarray, core_x: np.ndarray, counts: np.ndarray, sums: np.ndarray,
              width: float) -> tuple[np.ndarray, np.ndarray]:
    """The batch's least-squares estimate θ̂ = (Σ_a n_a x_a x_aᵀ)⁻¹ Σ_a x_a S_a from the reward
    sums S_a of its core actions, and the active arms x kept: those whose ⟨x, θ̂⟩ is within 2γ
    of the leader's (Hanna et al., Algorithm 1; γ = 2^−ℓ in L&S Ch. 22): (kept, estimates)."""
    gram = (core_x * counts[:, None]).T @ core_x
    estimate = x @ np.linalg.solve(gram, core_x.T @ sums)
    return estimate[leader(estimate)] - estimate <= 2.0 * width, estimate


@dataclass
class EliminationConfig:
    """Everything a run needs besides the environment and the two random streams."""

    mode: str
    horizon: int
    d: int
    sigma: float
    epsilon: float | None = None
    delta: float | None = None
    sensitivity: float = 1.0
    clip: float | None = None
    amplification: str = "fmt_thm"
    tol: float = 0.01
    width_scale: float = 1.0
    explicit: bool = False
    noise: Noise | None = None  # exact discrete noise (strict); None: numpy floats


def release_scale(cfg: EliminationConfig, epsilon: float) -> float:
    """Laplace scale of an ε-DP release of one value of sensitivity Δ: Δ/ε, or its exact
    discrete calibration (grid rounding included) under strict accounting."""
    if cfg.noise is not None and cfg.noise.exact:
        return cfg.noise.calibrate_laplace(cfg.sensitivity, epsilon, 1)[0]
    return laplace_scale(cfg.sensitivity, epsilon)


def release_sensitivity(cfg: EliminationConfig, scale: float) -> float:
    """Sensitivity of the released value: Δ, plus one grid step when it is snapped."""
    if cfg.noise is not None and cfg.noise.exact:
        return cfg.sensitivity + cfg.noise.grid(scale)
    return cfg.sensitivity


@dataclass(frozen=True)
class BatchLabel:
    """Batch i of a run as its release names it: its rounds n_i, core size |C_i| and the number
    of reports its amplification bound is evaluated at."""

    index: int
    rounds: int
    core: int
    amplification_n: int


def batch_one(counts: np.ndarray) -> BatchLabel:
    """A first batch of the given counts (a batch played outside a run)."""
    n = int(np.sum(counts))
    return BatchLabel(1, n, int(np.size(counts)), n)


def shuffled_cost(cfg: EliminationConfig, n: int) -> Callable[[Drawn], dict[str, float]]:
    """The cost of n shuffled ε0-LDP reports, ε0 = Δ'/b of the noise drawn, amplified to
    (ε_i, δ) (Hanna et al., Theorem 3; docs/linear.md, "Amplification bounds")."""

    def cost(drawn: Drawn) -> dict[str, float]:
        eps0 = drawn.sensitivity / drawn.scale
        return {"epsilon": amplified_epsilon(eps0, n, cfg.delta, cfg.amplification),  # type: ignore[arg-type]
                "delta": float(cfg.delta)}  # type: ignore[arg-type]

    return cost


def release_terms(cfg: EliminationConfig, label: BatchLabel, scale: float) -> dict[str, Any]:
    """Name, ledger mechanism, partition, note and cost of batch i's release: its per-action
    sums (central, Algorithm 1) or its clients' reports (local, Algorithm 2; shuffled,
    Algorithm 3). Each reward is in one batch: one partition per batch."""
    i, n_i = label.index, label.rounds
    clipped = (f"rewards clipped to [-{cfg.clip}, {cfg.clip}]" if cfg.clip is not None
               else "rewards not clipped: sensitivity is nominal")
    terms: dict[str, Any] = {"partition": f"batch {i}", "cost": drawn_cost}
    if cfg.mode == "central":
        return {**terms, "name": f"batch {i} per-action sums", "ledger_mechanism": "laplace",
                "note": f"{label.core} core sums of {n_i} rewards; {clipped}"}
    if cfg.mode == "local":
        return {**terms, "name": f"batch {i} reports", "ledger_mechanism": "laplace (local)",
                "note": f"{n_i} clients, one report each; {clipped}"}
    eps0 = release_sensitivity(cfg, scale) / scale
    return {**terms, "name": f"batch {i} shuffled reports",
            "ledger_mechanism": "laplace + shuffle",
            "cost": shuffled_cost(cfg, label.amplification_n),
            "note": f"{n_i} reports at epsilon0 = {eps0:.6g} ({cfg.amplification}); {clipped}"}


@dataclass
class EliminationTrace:
    """Per-round actions and rewards of a run, plus per-batch records."""

    segment_actions: np.ndarray  # action of each run of identical rounds, in play order
    segment_lengths: np.ndarray  # number of rounds of each segment
    segment_rewards: np.ndarray  # per-round realised reward of each segment (its sum / length)
    batch_start: list[int] = field(default_factory=list)
    batch_size: list[int] = field(default_factory=list)
    active: list[int] = field(default_factory=list)
    core: list[int] = field(default_factory=list)
    gamma: list[float] = field(default_factory=list)
    local_eps: list[float] = field(default_factory=list)
    batch_eps: list[float] = field(default_factory=list)
    noise_scale: list[float] = field(default_factory=list)
    amplification_n: list[int] = field(default_factory=list)
    g_over_k: list[float] = field(default_factory=list)
    fw_iterations: list[int] = field(default_factory=list)
    exploit_start: int = -1
    exploit_action: int = -1
    final_active: np.ndarray | None = None


class _Batcher:
    """Draws the realised reward sums and their privatised versions for one batch."""

    def __init__(
        self,
        cfg: EliminationConfig,
        means: np.ndarray,
        noise_sd: float,
        rng_env: np.random.Generator,
        rng_priv: np.random.Generator,
        ledger: PrivacyLedger | None = None,
    ) -> None:
        self.cfg = cfg
        self.means = means
        self.noise_sd = noise_sd
        self.rng_env = rng_env
        self.rng_priv = rng_priv
        self.ledger = ledger
        exact = cfg.noise is not None and cfg.noise.exact
        self.noise: Noise = cfg.noise if exact else NumpyNoise(rng_priv)  # type: ignore[assignment]

    def play(
        self, core: np.ndarray, counts: np.ndarray, scale: float, label: BatchLabel | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(segment actions, lengths, per-round realised rewards, privatised per-action sums);
        `scale` is the Laplace scale per core sum (central) or per report (local, shuffled)."""
        label = label or batch_one(counts)
        if self.cfg.explicit:
            return self._explicit(core, counts, scale, label)
        mu = self.means[core]
        sums = self.rng_env.normal(counts * mu, np.sqrt(counts) * self.noise_sd)
        noisy = self._private_sums(sums, counts, scale, label)
        per_round = np.divide(sums, counts, where=counts > 0, out=np.zeros_like(sums))
        return core, counts, per_round, noisy

    def _release(self, statistic: np.ndarray, scale: float, label: BatchLabel) -> np.ndarray:
        """The batch's one release through `privacy.release.release`: Laplace(b) on each
        coordinate, ℓ1 sensitivity Δ, one user moving one coordinate (its sum or its report)."""
        return release(self.noise, self.ledger, statistic, mechanism="laplace",
                       sensitivity=self.cfg.sensitivity, scale=scale, changed=1,
                       **release_terms(self.cfg, label, scale))

    def _private_sums(self, sums: np.ndarray, counts: np.ndarray, scale: float,
                      label: BatchLabel | None = None) -> np.ndarray:
        """Central: one Laplace per core sum (Algorithm 1); local/shuffled without clipping: the
        exact sum of the reports' Laplace noises; non-private: the sums themselves."""
        mode, label = self.cfg.mode, label or batch_one(counts)
        if mode == "central":
            return self._release(sums, scale, label)
        if mode in ("local", "shuffled"):
            return self._summed_reports(sums, counts, scale, label)
        return sums

    def _summed_reports(self, sums: np.ndarray, counts: np.ndarray, scale: float,
                        label: BatchLabel) -> np.ndarray:
        """The unclipped fast path (paper mode, its ledger breached): each sum plus the exact
        sum of its reports' Laplace(b) noises; the entry prices the b drawn per report."""
        noisy = sums + laplace_sum(self.rng_priv, counts, scale)
        if self.ledger is not None:
            terms = release_terms(self.cfg, label, scale)
            drawn = drawn_for(self.noise, "laplace", scale, self.cfg.sensitivity, 1)
            self.ledger.add(terms["ledger_mechanism"], terms["name"],
                            sensitivity=self.cfg.sensitivity, noise_scale=drawn.scale,
                            partition=terms["partition"], note=terms["note"],
                            **terms["cost"](drawn))
        return noisy

    def _reports(self, used: np.ndarray, scale: float,
                 label: BatchLabel | None = None) -> np.ndarray:
        """Each client's report: its (clipped) reward plus Laplace noise (Algorithms 2–3)."""
        return self._release(used, scale, label or batch_one(np.ones(used.size, np.int64)))

    def _explicit(
        self, core: np.ndarray, counts: np.ndarray, scale: float, label: BatchLabel
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every reward drawn, clipped if asked, privatised per report and shuffled.

        The explicit path of docs/linear.md, "Simulation paths".
        """
        per_action = [
            self.means[a] + self.noise_sd * self.rng_env.standard_normal(n)
            for a, n in zip(core, counts, strict=True)
        ]
        rounds = np.repeat(np.arange(core.size), counts)
        realised = np.concatenate(per_action) if per_action else np.zeros(0)
        ones = np.ones(realised.size, dtype=np.int64)
        used = realised if self.cfg.clip is None else clip_rewards(realised, self.cfg.clip)
        mode = self.cfg.mode
        if mode in ("nonprivate", "central"):
            sums = per_action_sums(rounds, used, core.size)
            return core[rounds], ones, realised, self._private_sums(sums, counts, scale, label)
        reports = self._reports(used, scale, label)
        if mode == "local":
            return core[rounds], ones, realised, per_action_sums(rounds, reports, core.size)
        shuffler = Shuffler(self.rng_priv)
        clients = shuffler.assign(counts)  # client j plays core[clients[j]]
        order = np.argsort(clients, kind="stable")  # the j-th report of each action, in order
        client_reports = np.empty_like(reports)
        client_rewards = np.empty_like(realised)
        client_reports[order] = reports
        client_rewards[order] = realised
        got_actions, got_reports = shuffler.collect(clients, client_reports)
        sums = per_action_sums(got_actions, got_reports, core.size)
        return core[clients], ones, client_rewards, sums


def run_elimination(
    actions: np.ndarray,
    means: np.ndarray,
    noise_sd: float,
    cfg: EliminationConfig,
    rng_env: np.random.Generator,
    rng_priv: np.random.Generator,
    ledger: PrivacyLedger | None = None,
) -> EliminationTrace:
    """Elimination skeleton for one mode: rewards from `rng_env`, privacy noise from `rng_priv`;
    each batch's release writes its entry in `ledger`.

    docs/linear.md, "Batch schedule and skeleton" (Hanna et al., Algorithms 1–3).
    """
    horizon, n_actions = cfg.horizon, actions.shape[0]
    q, batches = batch_schedule(horizon)
    log_term = math.log(4.0 * n_actions * batches * horizon)
    batcher = _Batcher(cfg, means, noise_sd, rng_env, rng_priv, ledger)
    active = np.arange(n_actions)
    segments: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    trace = EliminationTrace(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    t = 0
    estimate: np.ndarray | None = None
    for i in range(1, batches + 1):
        if active.size == 1:
            break
        design = compute_design(actions[active], tol=cfg.tol)
        x = actions[active] @ design.basis.T
        q_i = q**i
        counts = batch_counts(design.weights, q_i, horizon - t)
        support = np.flatnonzero(counts > 0)
        n_i = int(counts.sum())
        local_scale, eps0, batch_eps = _local_budget(cfg, n_i, q_i)
        scale = _noise_scale(cfg, local_scale)
        label = BatchLabel(i, n_i, int(design.support.size), _amplification_n(cfg, n_i, q_i))
        played, lengths, realised, noisy = batcher.play(active[support], counts[support], scale,
                                                        label)
        segments.append((played, lengths, realised))
        trace.batch_start.append(t)
        trace.batch_size.append(n_i)
        trace.active.append(int(active.size))
        trace.core.append(int(design.support.size))
        trace.local_eps.append(eps0)
        trace.batch_eps.append(batch_eps)
        trace.noise_scale.append(scale)
        trace.amplification_n.append(_amplification_n(cfg, n_i, q_i))
        trace.g_over_k.append(design.g / design.rank)
        trace.fw_iterations.append(design.iterations)
        t += n_i
        if t >= horizon:
            trace.gamma.append(math.nan)
            break
        gamma = cfg.width_scale * _width(
            cfg, design.support.size, q_i, batches, log_term, local_scale
        )
        trace.gamma.append(gamma)
        keep, estimate = eliminate(x, x[support], counts[support], noisy, gamma)
        active, estimate = active[keep], estimate[keep]
    if t < horizon:
        best = _committed(active, estimate)
        trace.exploit_start, trace.exploit_action = t, best
        segments.append(_exploit_segment(cfg, best, means[best], noise_sd, horizon - t, rng_env))
    trace.final_active = active
    trace.segment_actions = np.concatenate([s[0] for s in segments]).astype(np.int64)
    trace.segment_lengths = np.concatenate([s[1] for s in segments]).astype(np.int64)
    trace.segment_rewards = np.concatenate([s[2] for s in segments]).astype(np.float64)
    return trace


def run_ls_elimination(
    actions: np.ndarray,
    means: np.ndarray,
    noise_sd: float,
    cfg: EliminationConfig,
    rng_env: np.random.Generator,
    rng_priv: np.random.Generator,
) -> EliminationTrace:
    """Phased elimination with G-optimal exploration (Lattimore & Szepesvári, Ch. 22, Alg. 12).

    Phase ℓ: ε_ℓ = 2^{−ℓ}, T_ℓ(a) = ⌈2 g σ² π(a)/ε_ℓ² · ln(K ℓ(ℓ+1)/δ)⌉ with δ = 1/T and g the
    achieved G-value; eliminate a when max_b ⟨θ̂, b − a⟩ > 2ε_ℓ; play the last action left.
    """
    horizon, n_actions = cfg.horizon, actions.shape[0]
    batcher = _Batcher(cfg, means, noise_sd, rng_env, rng_priv)
    active = np.arange(n_actions)
    segments: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    trace = EliminationTrace(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    t, phase = 0, 0
    estimate: np.ndarray | None = None
    while active.size > 1 and t < horizon:
        phase += 1
        width = 2.0**-phase
        design = compute_design(actions[active], tol=cfg.tol)
        x = actions[active] @ design.basis.T
        scale = 2.0 * design.g * cfg.sigma**2 / width**2
        scale *= math.log(n_actions * phase * (phase + 1) * horizon)
        counts = batch_counts(design.weights, scale, horizon - t)
        support = np.flatnonzero(counts > 0)
        played, lengths, realised, sums = batcher.play(active[support], counts[support],
                                                       math.nan)
        segments.append((played, lengths, realised))
        trace.batch_start.append(t)
        trace.batch_size.append(int(counts.sum()))
        trace.active.append(int(active.size))
        trace.core.append(int(design.support.size))
        trace.gamma.append(width)
        trace.g_over_k.append(design.g / design.rank)
        trace.fw_iterations.append(design.iterations)
        t += int(counts.sum())
        if t >= horizon:
            break
        keep, estimate = eliminate(x, x[support], counts[support], sums, width)
        active, estimate = active[keep], estimate[keep]
    if t < horizon:
        best = _committed(active, estimate)
        trace.exploit_start, trace.exploit_action = t, best
        segments.append(_exploit_segment(cfg, best, means[best], noise_sd, horizon - t, rng_env))
    trace.final_active = active
    trace.segment_actions = np.concatenate([s[0] for s in segments]).astype(np.int64)
    trace.segment_lengths = np.concatenate([s[1] for s in segments]).astype(np.int64)
    trace.segment_rewards = np.concatenate([s[2] for s in segments]).astype(np.float64)
    return trace


def _committed(active: np.ndarray, estimate: np.ndarray | None) -> int:
    """The action the exploit phase plays: the leader of the last estimates (the only action
    when none were made)."""
    return int(active[0] if estimate is None else active[leader(estimate)])


def _exploit_segment(
    cfg: EliminationConfig,
    action: int,
    mean: float,
    noise_sd: float,
    n: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exploit-phase rounds (rewards never read by an estimator); exact sum spread evenly."""
    if cfg.explicit:
        rewards = mean + noise_sd * rng.standard_normal(n)
        return np.full(n, action), np.ones(n, dtype=np.int64), rewards
    total = rng.normal(n * mean, math.sqrt(n) * noise_sd)
    return np.array([action]), np.array([n]), np.array([total / n])


def _local_budget(
    cfg: EliminationConfig, n_i: int, q_i: float
) -> tuple[float | None, float, float]:
    """(per-report Laplace scale, per-report ε0, central ε of the batch) for the mode.

    Hanna et al., Algorithms 1–3 (Sections 3–5).
    """
    if cfg.mode == "nonprivate":
        return None, math.nan, math.nan
    eps = float(cfg.epsilon)  # type: ignore[arg-type]
    if cfg.mode == "central":
        return None, math.nan, eps
    if cfg.mode == "local":
        return release_scale(cfg, eps), eps, eps
    n_bound = _amplification_n(cfg, n_i, q_i)
    eps0 = local_epsilon(eps, n_bound, cfg.delta, cfg.amplification)  # type: ignore[arg-type]
    batch_eps = amplified_epsilon(eps0, n_bound, cfg.delta, cfg.amplification)  # type: ignore[arg-type]
    return release_scale(cfg, eps0), eps0, batch_eps


def _amplification_n(cfg: EliminationConfig, n_i: int, q_i: float) -> int:
    """Number of shuffled reports the amplification bound is evaluated at.

    docs/linear.md, "Amplification bounds": n_i, or min(n_i, ⌊q^i⌋) for the numerical bound.
    """
    return n_i if cfg.amplification != "numerical" else max(1, min(n_i, math.floor(q_i)))


def _noise_scale(cfg: EliminationConfig, local_scale: float | None) -> float:
    """Laplace scale of the noise a batch adds: per core sum (central) or per report."""
    if cfg.mode == "central":
        return release_scale(cfg, cfg.epsilon)  # type: ignore[arg-type]
    return math.nan if local_scale is None else local_scale


def _width(
    cfg: EliminationConfig,
    core: int,
    q_i: float,
    batches: int,
    log_term: float,
    local_scale: float | None,
) -> float:
    """γ_i of the mode (our derivation: docs/linear.md, "Widths")."""
    base = sub_gaussian_width(cfg.sigma, cfg.d, log_term, q_i)
    if cfg.mode == "nonprivate":
        return base
    if cfg.mode == "central":
        scale = release_scale(cfg, cfg.epsilon)  # type: ignore[arg-type]
        return base + central_width(scale, cfg.d, core, q_i, batches, cfg.horizon)
    return base + laplace_sum_width(local_scale, cfg.d, log_term, q_i)  # type: ignore[arg-type]


class EliminationPolicy(BatchedPolicy):
    """Common policy wrapper: validates parameters, runs the vectorised path, keeps the ledger."""

    decision_rule = staticmethod(leader)
    update_rule = staticmethod(eliminate)
    mode: ClassVar[str] = "nonprivate"
    schedule: ClassVar[str] = "batched"
    families: ClassVar[tuple[str, ...]] = ("linear",)
    parameters: ClassVar[Declaration] = (
        number("tol", 0.01, "G-optimal design tolerance (Frank–Wolfe stops at g ≤ d(1 + tol))",
               gt=0, le=1),
        number("width_scale", 1.0, "multiplier of the elimination widths γ_i", gt=0),
        choice("path", "fast", "fast: exact per-batch sums; explicit: every reward drawn",
               PATHS),
    )

    def __init__(self, problem: ProblemInfo, rng: np.random.Generator, **kwargs: Any) -> None:
        super().__init__(problem, rng, **kwargs)
        if not isinstance(problem.horizon, int | np.integer) or problem.horizon < 1:
            raise ConfigError(f"horizon = {problem.horizon!r} is not allowed; must be >= 1")
        self.config = self._config()
        self._events: dict[str, np.ndarray] = {}
        self._diagnostics: dict[str, float] = {}

    def _config(self) -> EliminationConfig:
        p = self.params
        return EliminationConfig(
            mode=self.mode,
            horizon=int(self.problem.horizon),
            d=self.problem.d,
            sigma=float(self.problem.R),
            tol=float(p["tol"]),
            width_scale=float(p["width_scale"]),
            explicit=p["path"] == "explicit",
        )

    def play_batched(self, env: FixedActionEnvironment) -> tuple[np.ndarray, np.ndarray]:
        """Exact vectorised run on a fixed-action environment; the ledger gets every release."""
        actions = check_points(env.actions)
        if env.horizon != self.config.horizon:
            raise ConfigError(f"environment horizon {env.horizon} != policy horizon")
        args = (actions, np.asarray(env.means, float), float(env.noise_sd), self.config,
                env.noise_rng(), self.rng)
        if self.schedule == "ls":
            trace = run_ls_elimination(*args)
        else:
            trace = run_elimination(*args, self.ledger)
        gaps = env.means.max() - env.means
        regret = np.repeat(gaps[trace.segment_actions].astype(np.float64), trace.segment_lengths)
        reward = np.repeat(trace.segment_rewards, trace.segment_lengths)
        self._record(trace, gaps)
        return regret, reward

    def _record(self, trace: EliminationTrace, gaps: np.ndarray) -> None:
        best = int(np.argmin(gaps))
        self._events = {
            "batch_start": np.array(trace.batch_start, dtype=np.int64),
            "batch_size": np.array(trace.batch_size, dtype=np.int64),
            "active": np.array(trace.active, dtype=np.int64),
            "core": np.array(trace.core, dtype=np.int64),
            "gamma": np.array(trace.gamma, dtype=float),
        }
        if self.mode in ("local", "shuffled"):
            self._events["local_epsilon"] = np.array(trace.local_eps, dtype=float)
        sorted_gaps = np.sort(gaps)
        self._diagnostics = {
            "batches": float(len(trace.batch_start)),
            "exploit_start": float(trace.exploit_start),
            "exploit_gap": float(gaps[trace.exploit_action]) if trace.exploit_action >= 0 else 0.0,
            "final_active": float(trace.final_active.size),  # type: ignore[union-attr]
            "best_eliminated": float(best not in set(trace.final_active.tolist())),  # type: ignore[union-attr]
            "min_gap": float(sorted_gaps[1]) if gaps.size > 1 else 0.0,
            "max_core": float(max(trace.core, default=0)),
            "max_g_over_k": float(max(trace.g_over_k, default=0.0)),
            "fw_iterations": float(sum(trace.fw_iterations)),
        }

    def events(self) -> dict[str, np.ndarray]:
        return dict(self._events)

    def diagnostics(self) -> dict[str, float]:
        return dict(self._diagnostics)


class PrivateElimination(EliminationPolicy):
    """Private variants: Laplace noise with sensitivity Δ; `strict` clips rewards to [−B, B]."""

    private: ClassVar[bool] = True
    parameters: ClassVar[Declaration] = (
        *EliminationPolicy.parameters,
        number("sensitivity", None, "Laplace sensitivity Δ (null: 2·clip, or 1 unclipped)",
               gt=0, nullable=True),
        number("clip", None, "rewards clipped to [−clip, clip] (null: 1 in strict mode, "
               "none in paper mode)", gt=0, nullable=True),
    )

    @classmethod
    def check_combined(cls, params: dict[str, Any], accounting: str) -> None:
        """Strict accounting: the sensitivity must bound a changed clipped reward (2·clip)."""
        clip, sensitivity = cls._clip_and_sensitivity(params, accounting)
        if accounting == "strict" and sensitivity < 2.0 * clip:  # type: ignore[operator]
            raise ConfigError(
                f"sensitivity = {sensitivity} is not allowed in strict accounting; must be >= "
                f"2 * clip = {2.0 * clip}"  # type: ignore[operator]
            )

    @staticmethod
    def _clip_and_sensitivity(params: dict[str, Any], accounting: str
                              ) -> tuple[float | None, float]:
        """(clip, Δ) after the defaults: clip 1 in strict mode, Δ = 2·clip (1 unclipped)."""
        clip = params["clip"]
        if clip is None and accounting == "strict":
            clip = 1.0
        clip = None if clip is None else float(clip)
        sensitivity = params["sensitivity"]
        if sensitivity is None:
            sensitivity = 2.0 * clip if clip is not None else 1.0
        return clip, float(sensitivity)

    def _config(self) -> EliminationConfig:
        cfg = super()._config()
        clip, sensitivity = self._clip_and_sensitivity(self.params, self.accounting)
        cfg.epsilon, cfg.delta = float(self.epsilon), float(self.delta)  # type: ignore[arg-type]
        cfg.sensitivity, cfg.clip = sensitivity, clip
        cfg.noise = noise_for(self.accounting, self.rng)
        if clip is not None:
            cfg.explicit = True
        return cfg

    def finish(self) -> None:
        """Paper mode: a sensitivity that does not bound a changed reward voids the ε."""
        cfg, ledger = self.config, self.ledger
        if cfg.clip is None:
            ledger.breach(  # type: ignore[union-attr]
                "rewards are not clipped: the Laplace noise is calibrated to a nominal "
                f"sensitivity {cfg.sensitivity:g}, but a reward of the linear-Gaussian model is "
                "unbounded, so no finite epsilon holds")
        elif cfg.sensitivity < 2.0 * cfg.clip:
            ledger.breach(  # type: ignore[union-attr]
                f"sensitivity {cfg.sensitivity:g} is below the replace-one bound 2 * clip = "
                f"{2.0 * cfg.clip:g}")


class PhasedElimination(EliminationPolicy):
    """Non-private batched elimination on G-optimal core sets, γ_i = base_i.

    docs/linear.md, "Non-private baselines": the curve the private algorithms approach as ε grows.
    """

    name: ClassVar[str] = "PhasedElimination"
    mode: ClassVar[str] = "nonprivate"


class CentralDPElimination(PrivateElimination):
    """Algorithm 1: one Laplace(Δ/ε) per core action per batch, ε-DP (Hanna et al., Section 3)."""

    name: ClassVar[str] = "CentralDPElimination"
    mode: ClassVar[str] = "central"
    audits: ClassVar[tuple[PolicyAudit, ...]] = (elimination_reward_audit(name),)


class LocalDPElimination(PrivateElimination):
    """Algorithm 2: every client adds Laplace(Δ/ε0) to its reward, ε0-LDP (Hanna et al., Sec. 4)."""

    name: ClassVar[str] = "LocalDPElimination"
    mode: ClassVar[str] = "local"
    audits: ClassVar[tuple[PolicyAudit, ...]] = (elimination_reward_audit(name),)


class ShuffleDPElimination(PrivateElimination):
    """Algorithm 3: per-batch ε0 = f^{-1}_{n_i,δ}(ε), shuffled reports, (ε, δ)-DP.

    Hanna et al., Section 5 (Theorem 3).
    """

    name: ClassVar[str] = "ShuffleDPElimination"
    mode: ClassVar[str] = "shuffled"
    audits: ClassVar[tuple[PolicyAudit, ...]] = (elimination_reward_audit(name),)
    parameters: ClassVar[Declaration] = (
        *PrivateElimination.parameters,
        choice("amplification", "fmt_thm", "amplification-by-shuffling bound of the batches",
               BOUNDS),
    )

    def _config(self) -> EliminationConfig:
        cfg = super()._config()
        cfg.amplification = self.params["amplification"]
        return cfg


class LSPhasedElimination(EliminationPolicy):
    """Non-private phased elimination with G-optimal exploration (Lattimore–Szepesvári, Ch. 22)."""

    name: ClassVar[str] = "LSPhasedElimination"
    mode: ClassVar[str] = "nonprivate"
    schedule: ClassVar[str] = "ls"
