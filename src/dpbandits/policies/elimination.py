"""Batched elimination on G-optimal core sets: non-private, central, local and shuffled DP.

Hanna, Girgis, Fragouli, Diggavi, "Differentially Private Stochastic Linear Bandits: (Almost)
for Free" (Algorithms 1–3), as specified in linear spec §2–§8. Within a batch the policy is
fixed, so a run draws one reward sum (and one noise sum) per (batch, action): exact and fast.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from dpbandits.design import check_points, compute_design
from dpbandits.errors import ConfigError
from dpbandits.instances.base import ProblemInfo
from dpbandits.policies.base import Policy, RunResult, register
from dpbandits.privacy.amplification import BOUNDS, amplified_epsilon, local_epsilon
from dpbandits.privacy.laplace import clip_rewards, laplace_scale, laplace_sum
from dpbandits.privacy.shuffler import Shuffler, per_action_sums

MODES = ("nonprivate", "central", "local", "shuffled")
PATHS = ("fast", "explicit")


def batch_schedule(horizon: int) -> tuple[float, int]:
    """q = (2T)^{1/ln T} and M = ⌊ln T⌋ − 1 exploration batches, at least one (spec §2)."""
    if horizon < 1:
        raise ConfigError(f"horizon = {horizon!r} is not allowed; must be an integer >= 1")
    if horizon < 3:
        return math.e, 1
    log_t = math.log(horizon)
    return (2.0 * horizon) ** (1.0 / log_t), max(1, math.floor(log_t) - 1)


def batch_counts(weights: np.ndarray, q_i: float, remaining: int) -> np.ndarray:
    """n_{i,a} = ⌈π(a) q^i⌉ on the support, truncated in support order to the horizon (§2)."""
    counts = np.where(weights > 0, np.ceil(weights * q_i), 0.0).astype(np.int64)
    total = np.cumsum(counts)
    if total[-1] > remaining:
        counts = np.clip(remaining - (total - counts), 0, counts)
    return counts


def sub_gaussian_width(sigma: float, d: int, log_term: float, q_i: float) -> float:
    """base_i = σ √(4 d L_T / q^i) (spec §3)."""
    return sigma * math.sqrt(4.0 * d * log_term / q_i)


def laplace_sum_width(scale: float, d: int, log_term: float, q_i: float) -> float:
    """Bernstein width of per-reward Laplace(b) noise: b(√(16 d L_T/q^i) + 8 d L_T/q^i) (§5)."""
    return scale * (math.sqrt(16.0 * d * log_term / q_i) + 8.0 * d * log_term / q_i)


def central_width(scale: float, d: int, core: int, q_i: float, batches: int, horizon: int) -> float:
    """Width of one Laplace(Δ/ε) per core action: 2 d |C| (Δ/ε)/q^i · ln(2|C| M T) (§4)."""
    return 2.0 * d * core * scale / q_i * math.log(2.0 * core * batches * horizon)


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
    ) -> None:
        self.cfg = cfg
        self.means = means
        self.noise_sd = noise_sd
        self.rng_env = rng_env
        self.rng_priv = rng_priv

    def play(
        self, core: np.ndarray, counts: np.ndarray, local_scale: float | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(segment actions, lengths, per-round realised rewards, privatised per-action sums)."""
        if self.cfg.explicit:
            return self._explicit(core, counts, local_scale)
        mu = self.means[core]
        sums = self.rng_env.normal(counts * mu, np.sqrt(counts) * self.noise_sd)
        noisy = sums + self._noise(counts, local_scale)
        per_round = np.divide(sums, counts, where=counts > 0, out=np.zeros_like(sums))
        return core, counts, per_round, noisy

    def _noise(self, counts: np.ndarray, local_scale: float | None) -> np.ndarray:
        mode = self.cfg.mode
        if mode == "central":
            scale = laplace_scale(self.cfg.sensitivity, self.cfg.epsilon)  # type: ignore[arg-type]
            return self.rng_priv.laplace(0.0, scale, counts.size)
        if mode in ("local", "shuffled"):
            return laplace_sum(self.rng_priv, counts, local_scale)  # type: ignore[arg-type]
        return np.zeros(counts.size)

    def _explicit(
        self, core: np.ndarray, counts: np.ndarray, local_scale: float | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every reward drawn, clipped if asked, privatised per report and shuffled (§8)."""
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
            return core[rounds], ones, realised, sums + self._noise(counts, None)
        reports = used + self.rng_priv.laplace(0.0, local_scale, used.size)
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
) -> EliminationTrace:
    """Skeleton of spec §3 for one mode: rewards from `rng_env`, privacy noise from `rng_priv`."""
    horizon, n_actions = cfg.horizon, actions.shape[0]
    q, batches = batch_schedule(horizon)
    log_term = math.log(4.0 * n_actions * batches * horizon)
    batcher = _Batcher(cfg, means, noise_sd, rng_env, rng_priv)
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
        played, lengths, realised, noisy = batcher.play(
            active[support], counts[support], local_scale
        )
        segments.append((played, lengths, realised))
        trace.batch_start.append(t)
        trace.batch_size.append(n_i)
        trace.active.append(int(active.size))
        trace.core.append(int(design.support.size))
        trace.local_eps.append(eps0)
        trace.batch_eps.append(batch_eps)
        trace.g_over_k.append(design.g / design.rank)
        trace.fw_iterations.append(design.iterations)
        t += n_i
        if t >= horizon:
            trace.gamma.append(math.nan)
            break
        xs = x[support]
        gram = (xs * counts[support, None]).T @ xs
        theta_hat = np.linalg.solve(gram, xs.T @ noisy)
        gamma = cfg.width_scale * _width(
            cfg, design.support.size, q_i, batches, log_term, local_scale
        )
        trace.gamma.append(gamma)
        estimate = x @ theta_hat
        keep = estimate.max() - estimate <= 2.0 * gamma
        active, estimate = active[keep], estimate[keep]
    if t < horizon:
        best = int(active[0] if active.size == 1 else active[int(np.argmax(estimate))])
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
    """Phased elimination with G-optimal exploration (LS Ch. 22, Alg. 12; linear spec §7.2).

    Phase ℓ: ε_ℓ = 2^{−ℓ}, T_ℓ(a) = ⌈2 g σ² π(a)/ε_ℓ² · ln(K ℓ(ℓ+1)/δ)⌉ with δ = 1/T and g the
    achieved G-value; eliminate a when max_b ⟨θ̂, b − a⟩ > 2ε_ℓ; play the last action left.
    """
    horizon, n_actions = cfg.horizon, actions.shape[0]
    batcher = _Batcher(cfg, means, noise_sd, rng_env, rng_priv)
    active = np.arange(n_actions)
    segments: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    trace = EliminationTrace(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    t, phase = 0, 0
    while active.size > 1 and t < horizon:
        phase += 1
        width = 2.0**-phase
        design = compute_design(actions[active], tol=cfg.tol)
        x = actions[active] @ design.basis.T
        scale = 2.0 * design.g * cfg.sigma**2 / width**2
        scale *= math.log(n_actions * phase * (phase + 1) * horizon)
        counts = batch_counts(design.weights, scale, horizon - t)
        support = np.flatnonzero(counts > 0)
        played, lengths, realised, sums = batcher.play(active[support], counts[support], None)
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
        xs = x[support]
        gram = (xs * counts[support, None]).T @ xs
        estimate = x @ np.linalg.solve(gram, xs.T @ sums)
        active = active[estimate.max() - estimate <= 2.0 * width]
    if t < horizon:
        best = int(active[0])
        trace.exploit_start, trace.exploit_action = t, best
        segments.append(_exploit_segment(cfg, best, means[best], noise_sd, horizon - t, rng_env))
    trace.final_active = active
    trace.segment_actions = np.concatenate([s[0] for s in segments]).astype(np.int64)
    trace.segment_lengths = np.concatenate([s[1] for s in segments]).astype(np.int64)
    trace.segment_rewards = np.concatenate([s[2] for s in segments]).astype(np.float64)
    return trace


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
    """(per-report Laplace scale, per-report ε0, central ε of the batch) for the mode (§4–6)."""
    if cfg.mode == "nonprivate":
        return None, math.nan, math.nan
    eps = float(cfg.epsilon)  # type: ignore[arg-type]
    if cfg.mode == "central":
        return None, math.nan, eps
    if cfg.mode == "local":
        return laplace_scale(cfg.sensitivity, eps), eps, eps
    n_bound = n_i if cfg.amplification != "numerical" else max(1, min(n_i, math.floor(q_i)))
    eps0 = local_epsilon(eps, n_bound, cfg.delta, cfg.amplification)  # type: ignore[arg-type]
    batch_eps = amplified_epsilon(eps0, n_bound, cfg.delta, cfg.amplification)  # type: ignore[arg-type]
    return laplace_scale(cfg.sensitivity, eps0), eps0, batch_eps


def _width(
    cfg: EliminationConfig,
    core: int,
    q_i: float,
    batches: int,
    log_term: float,
    local_scale: float | None,
) -> float:
    """γ_i of the mode (spec §4–7)."""
    base = sub_gaussian_width(cfg.sigma, cfg.d, log_term, q_i)
    if cfg.mode == "nonprivate":
        return base
    if cfg.mode == "central":
        scale = laplace_scale(cfg.sensitivity, cfg.epsilon)  # type: ignore[arg-type]
        return base + central_width(scale, cfg.d, core, q_i, batches, cfg.horizon)
    return base + laplace_sum_width(local_scale, cfg.d, log_term, q_i)  # type: ignore[arg-type]


class EliminationPolicy(Policy):
    """Common policy wrapper: validates parameters, runs the vectorised path, keeps the ledger."""

    mode: ClassVar[str] = "nonprivate"
    schedule: ClassVar[str] = "batched"
    families: ClassVar[tuple[str, ...]] = ("linear",)
    defaults: ClassVar[dict[str, Any]] = {"tol": 0.01, "width_scale": 1.0, "path": "fast"}

    def __init__(self, problem: ProblemInfo, rng: np.random.Generator, **kwargs: Any) -> None:
        super().__init__(problem, rng, **kwargs)
        if not isinstance(problem.horizon, int | np.integer) or problem.horizon < 1:
            raise ConfigError(f"horizon = {problem.horizon!r} is not allowed; must be >= 1")
        p = self.params
        if p["path"] not in PATHS:
            raise ConfigError(f"path = {p['path']!r} is not allowed; allowed: {', '.join(PATHS)}")
        _positive("width_scale", p["width_scale"])
        if not 0 < p["tol"] <= 1:
            raise ConfigError(f"tol = {p['tol']!r} is not allowed; must be in (0, 1]")
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

    def select(self, t: int, arms: np.ndarray) -> int:
        raise NotImplementedError(f"{self.name} plays whole batches; use run(env)")

    def update(self, t: int, x: np.ndarray, r: float) -> None:
        raise NotImplementedError(f"{self.name} plays whole batches; use run(env)")

    def run(self, env: Any) -> RunResult:
        """Exact vectorised run on a fixed-action environment (needs `actions`, `means`)."""
        start = time.perf_counter()
        for attr in ("actions", "means", "noise_sd", "noise_rng"):
            if not hasattr(env, attr):
                raise ConfigError(
                    f"{self.name} needs a fixed-action linear environment (e.g. linear_sphere); "
                    f"the environment has no {attr!r}"
                )
        actions = check_points(env.actions)
        if env.horizon != self.config.horizon:
            raise ConfigError(f"environment horizon {env.horizon} != policy horizon")
        runner = run_ls_elimination if self.schedule == "ls" else run_elimination
        trace = runner(
            actions,
            np.asarray(env.means, float),
            float(env.noise_sd),
            self.config,
            env.noise_rng(),
            self.rng,
        )
        gaps = env.means.max() - env.means
        regret = np.repeat(gaps[trace.segment_actions].astype(np.float64), trace.segment_lengths)
        reward = np.repeat(trace.segment_rewards, trace.segment_lengths)
        self._record(trace, gaps)
        if self.ledger is not None:
            self._account(trace)
            self.ledger.check()
        return RunResult(
            regret,
            reward,
            self.events(),
            self.diagnostics(),
            time.perf_counter() - start,
        )

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

    def _account(self, trace: EliminationTrace) -> None:
        """Per-batch ledger entries; each reward is in one batch, so batches compose in parallel."""

    def events(self) -> dict[str, np.ndarray]:
        return dict(self._events)

    def diagnostics(self) -> dict[str, float]:
        return dict(self._diagnostics)


def _positive(name: str, value: Any) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(f"{name} = {value!r} is not allowed; must be a finite number > 0")
    return float(value)


class PrivateElimination(EliminationPolicy):
    """Private variants: Laplace noise with sensitivity Δ; `strict` clips rewards to [−B, B]."""

    private: ClassVar[bool] = True
    defaults: ClassVar[dict[str, Any]] = {
        **EliminationPolicy.defaults,
        "sensitivity": None,
        "clip": None,
    }

    def _config(self) -> EliminationConfig:
        cfg = super()._config()
        p = self.params
        clip = p["clip"]
        if clip is None and self.accounting == "strict":
            clip = 1.0
        if clip is not None:
            clip = _positive("clip", clip)
        sensitivity = p["sensitivity"]
        if sensitivity is None:
            sensitivity = 2.0 * clip if clip is not None else 1.0
        sensitivity = _positive("sensitivity", sensitivity)
        if self.accounting == "strict" and sensitivity < 2.0 * clip:  # type: ignore[operator]
            raise ConfigError(
                f"sensitivity = {sensitivity} is not allowed in strict accounting; must be >= "
                f"2 * clip = {2.0 * clip}"  # type: ignore[operator]
            )
        cfg.epsilon, cfg.delta = float(self.epsilon), float(self.delta)  # type: ignore[arg-type]
        cfg.sensitivity, cfg.clip = sensitivity, clip
        if clip is not None:
            cfg.explicit = True
        return cfg

    def _note(self) -> str:
        if self.config.clip is None:
            return "rewards not clipped: nominal guarantee for sensitivity Δ (paper accounting)"
        return f"rewards clipped to [-{self.config.clip}, {self.config.clip}]"


@register
class PhasedElimination(EliminationPolicy):
    """Non-private batched elimination on G-optimal core sets, γ_i = base_i (spec §7.1)."""

    name: ClassVar[str] = "PhasedElimination"
    mode: ClassVar[str] = "nonprivate"


@register
class CentralDPElimination(PrivateElimination):
    """Algorithm 1: one Laplace(Δ/ε) per core action per batch, ε-DP (spec §4)."""

    name: ClassVar[str] = "CentralDPElimination"
    mode: ClassVar[str] = "central"

    def _account(self, trace: EliminationTrace) -> None:
        cfg, ledger = self.config, self.ledger
        for i, (n_i, core) in enumerate(zip(trace.batch_size, trace.core, strict=True), 1):
            ledger.add(  # type: ignore[union-attr]
                "laplace",
                f"batch {i} per-action sums",
                sensitivity=cfg.sensitivity,
                noise_scale=laplace_scale(cfg.sensitivity, cfg.epsilon),
                epsilon=cfg.epsilon,
                delta=0.0,
                count=core,
                note=f"{n_i} rewards; {self._note()}",
            )
        ledger.declare_total(  # type: ignore[union-attr]
            cfg.epsilon,
            0.0,
            "parallel composition: each reward enters one noisy sum of one batch",
        )


@register
class LocalDPElimination(PrivateElimination):
    """Algorithm 2: every client adds Laplace(Δ/ε0) to its reward, ε0-LDP (spec §5)."""

    name: ClassVar[str] = "LocalDPElimination"
    mode: ClassVar[str] = "local"

    def _account(self, trace: EliminationTrace) -> None:
        cfg, ledger = self.config, self.ledger
        for i, n_i in enumerate(trace.batch_size, 1):
            ledger.add(  # type: ignore[union-attr]
                "laplace (local)",
                f"batch {i} reports",
                sensitivity=cfg.sensitivity,
                noise_scale=laplace_scale(cfg.sensitivity, cfg.epsilon),
                epsilon=cfg.epsilon,
                delta=0.0,
                count=n_i,
                note=self._note(),
            )
        ledger.declare_total(  # type: ignore[union-attr]
            cfg.epsilon,
            0.0,
            "epsilon0-LDP: each client sends one Laplace report",
        )


@register
class ShuffleDPElimination(PrivateElimination):
    """Algorithm 3: per-batch ε0 = f^{-1}_{n_i,δ}(ε), shuffled reports, (ε, δ)-DP (spec §6)."""

    name: ClassVar[str] = "ShuffleDPElimination"
    mode: ClassVar[str] = "shuffled"
    defaults: ClassVar[dict[str, Any]] = {**PrivateElimination.defaults, "amplification": "fmt_thm"}

    def _config(self) -> EliminationConfig:
        cfg = super()._config()
        if self.params["amplification"] not in BOUNDS:
            raise ConfigError(
                f"amplification = {self.params['amplification']!r} is not allowed; allowed: "
                f"{', '.join(BOUNDS)}"
            )
        cfg.amplification = self.params["amplification"]
        return cfg

    def _account(self, trace: EliminationTrace) -> None:
        cfg, ledger = self.config, self.ledger
        for i, (n_i, eps0, eps_i) in enumerate(
            zip(trace.batch_size, trace.local_eps, trace.batch_eps, strict=True), 1
        ):
            ledger.add(  # type: ignore[union-attr]
                "laplace + shuffle",
                f"batch {i} shuffled reports",
                sensitivity=cfg.sensitivity,
                noise_scale=laplace_scale(cfg.sensitivity, eps0),
                epsilon=eps_i,
                delta=cfg.delta,
                count=1,
                note=f"{n_i} reports at epsilon0 = {eps0:.6g} ({cfg.amplification}); "
                f"{self._note()}",
            )
        worst = max(trace.batch_eps, default=0.0)
        ledger.declare_total(  # type: ignore[union-attr]
            worst,
            cfg.delta if trace.batch_eps else 0.0,
            "parallel composition: each client's report is shuffled in exactly one batch",
        )


@register
class LSPhasedElimination(EliminationPolicy):
    """Non-private phased elimination with G-optimal exploration (LS Ch. 22; spec §7.2)."""

    name: ClassVar[str] = "LSPhasedElimination"
    mode: ClassVar[str] = "nonprivate"
    schedule: ClassVar[str] = "ls"
