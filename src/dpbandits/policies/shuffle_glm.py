"""Shuffle-GLM: the batched shuffle-DP algorithm for stochastic contexts, Algorithm 1 (spec §5).

No reference code exists; every reconstructed choice ([A] in the spec) is a named parameter.
Batch 1 plays a G-optimal design on each round's arms; later batches eliminate with every
earlier estimate, rescale the survivors by μ̇(⟨x, θ̂₁⟩)/β(x) and play a G-optimal design on
them. At the end of a batch its data (only) give a shuffle-private Gram matrix (vector
summation) and a shuffle-private estimate (P_GD), each at (ε/2, δ/2). Batches involve disjoint
users, so the per-user guarantee is (ε, δ) by parallel composition: the ledger has one
partition per batch. Strict accounting requires the constants of the CJMP theorem.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from dpbandits.contract import ProblemInfo
from dpbandits.design import g_optimal_design
from dpbandits.errors import ConfigError, PrivacyBudgetError
from dpbandits.links import get_link
from dpbandits.policies._glm_common import check_bool, check_choice, check_positive
from dpbandits.policies.base import Policy, register
from dpbandits.privacy.clipping import clip_arms
from dpbandits.privacy.shuffle_gd import MAX_ITERS, STEP_RULES, shuffle_gd
from dpbandits.privacy.split import compose
from dpbandits.privacy.tree import psd_repair
from dpbandits.privacy.vector_sum import (
    CB_THEORY,
    LOG_ARGS,
    MAX_EPSILON,
    sym_sum,
    upper_indices,
    vector_sum_params,
)

GROWTH_RULES = ("sqrt", "linear")
LAMBDA_BANDS = ("sigma", "kappa_star")


def n_batches_default(horizon: int) -> int:
    """M = ⌈log2 log2 T⌉ + 1 (spec §5.1)."""
    return math.ceil(math.log2(max(math.log2(max(horizon, 2)), 1.0))) + 1


def alpha_default(horizon: int, n_batches: int) -> float:
    """α = T^{1/(2(1 − 2^{1−M}))}: the nominal last batch then has length T (spec §5.1)."""
    return horizon ** (1.0 / (2.0 * (1.0 - 2.0 ** (1 - n_batches))))


def warmup_length(horizon: int, d: int, S: float, kappa: float, gamma: float, alpha: float,
                  cap: bool) -> int:
    """B₁ = ⌈((κ e^{3S} d² γ²/S)·α)^{2/3}⌉, capped at min(·, max(10d², ⌈√T⌉), ⌊T/4⌋) (§5.1)."""
    log_raw = (2.0 / 3.0) * (math.log(kappa) + 3.0 * S + 2.0 * math.log(d)
                             + 2.0 * math.log(gamma) - math.log(S) + math.log(alpha))
    raw = math.inf if log_raw > 700 else math.ceil(math.exp(log_raw))
    if cap:
        raw = min(raw, max(10 * d * d, math.ceil(math.sqrt(horizon))), horizon // 4)
    return int(max(1, min(raw, horizon)))


def batch_schedule(horizon: int, first: int, alpha: float, n_batches: int,
                   growth: str = "sqrt") -> list[int]:
    """Batch lengths: B₁, B₂ = ⌈α⌉, B_k = ⌈α√B_{k−1}⌉; truncated at T, last extended to T."""
    nominal = [first]
    for k in range(2, n_batches + 1):
        if k == 2:
            nominal.append(math.ceil(alpha))
        elif growth == "sqrt":
            nominal.append(math.ceil(alpha * math.sqrt(nominal[-1])))
        else:
            nominal.append(math.ceil(alpha * nominal[-1]))
    lengths: list[int] = []
    used = 0
    for b in nominal:
        if used >= horizon:
            break
        take = min(b, horizon - used)
        lengths.append(take)
        used += take
    if used < horizon:
        lengths[-1] += horizon - used
    return lengths


@register
class ShuffleGLM(Policy):
    """Algorithm 1 (spec §5.3). Reconstruction parameters (all [A] in the spec):

    `n_batches` (M; None = ⌈log2 log2 T⌉ + 1), `alpha` (None = T^{1/(2(1−2^{1−M}))}),
    `warmup_cap` / `warmup_length` (B₁), `batch_growth` ("sqrt": B_k = ⌈α√B_{k−1}⌉, or
    "linear"), `elim_kappa_power` (first elimination width γκ^p‖x‖_{V⁻¹}, p = ½; [P] shows 1),
    `beta_kappa_power` (β(x) = exp(R·min(2S, γκ^p‖x‖_{V⁻¹}))), `scale_sqrt` (x̃ = √w·x, else
    w·x), `design_tol` (G-optimal design tolerance), `c_b` and `log_arg` (vector-summation
    constant and log argument; c_b below the theory constant carries no formal guarantee),
    `gamma` (None = R·S·√(d ln(T/δ))), `lambda_base` (the noise-free part of λ; None =
    20dR ln T), `gd_log_power` (N ∝ 1/ln^p), `gd_max_iters`,
    `gd_step` ("Lg": η = 2S/(L_g√N); "paper_L": L = RS + S + Sλ_max/B_k), `lambda_band`
    (λ_max/min = λ ± σ̃(4d + 2ln(2dMT/δ)) or the κ*-based band), `psd_floor` (clip the
    eigenvalues of V, H_k at λ_min instead of 1e-12).
    """

    name: ClassVar[str] = "Shuffle-GLM"
    private: ClassVar[bool] = True
    families: ClassVar[tuple[str, ...]] = ("logistic", "probit")
    defaults: ClassVar[dict[str, Any]] = {
        "n_batches": None,
        "alpha": None,
        "warmup_cap": True,
        "warmup_length": None,
        "batch_growth": "sqrt",
        "elim_kappa_power": 0.5,
        "beta_kappa_power": 0.5,
        "scale_sqrt": True,
        "design_tol": 0.05,
        "c_b": CB_THEORY,
        "log_arg": "theory",
        "gamma": None,
        "lambda_base": None,
        "gd_log_power": 3,
        "gd_max_iters": MAX_ITERS,
        "gd_step": "Lg",
        "lambda_band": "sigma",
        "psd_floor": False,
    }

    def __init__(self, problem: ProblemInfo, rng: np.random.Generator, **kwargs: Any) -> None:
        super().__init__(problem, rng, **kwargs)
        p, name = self.params, self.name
        T, d, S, R = problem.horizon, problem.d, problem.S, problem.R
        self.link = get_link(problem.family)
        self.kappa, self.kappa_star = problem.kappa_pub, problem.kappa_star_pub
        m = p["n_batches"]
        if m is not None and (not isinstance(m, int) or isinstance(m, bool) or m < 1):
            raise ConfigError(f"{name}: n_batches = {m!r} is not allowed; must be an integer >= 1")
        self.n_batches = n_batches_default(T) if m is None else m
        alpha = check_positive(name, "alpha", p["alpha"], allow_none=True)
        self.alpha = alpha_default(T, self.n_batches) if alpha is None else alpha
        gamma = check_positive(name, "gamma", p["gamma"], allow_none=True)
        delta = float(self.delta)  # type: ignore[arg-type]
        self.gamma = R * S * math.sqrt(d * math.log(T / delta)) if gamma is None else gamma
        base = check_positive(name, "lambda_base", p["lambda_base"], allow_none=True,
                              allow_zero=True)
        self.lambda_base = 20.0 * d * R * math.log(T) if base is None else base
        cap = check_bool(name, "warmup_cap", p["warmup_cap"])
        first = p["warmup_length"]
        if first is None:
            first = warmup_length(T, d, S, self.kappa, self.gamma, self.alpha, bool(cap))
        elif not isinstance(first, int) or isinstance(first, bool) or not 1 <= first <= T:
            raise ConfigError(f"{name}: warmup_length = {first!r} is not allowed; must be an "
                              f"integer in [1, {T}] or null")
        growth = check_choice(name, "batch_growth", p["batch_growth"], GROWTH_RULES)
        self.lengths = batch_schedule(T, first, self.alpha, self.n_batches, growth)
        self.ends = np.cumsum(self.lengths)
        self.elim_power = check_positive(name, "elim_kappa_power", p["elim_kappa_power"],
                                         allow_zero=True)
        self.beta_power = check_positive(name, "beta_kappa_power", p["beta_kappa_power"],
                                         allow_zero=True)
        self.scale_sqrt = check_bool(name, "scale_sqrt", p["scale_sqrt"])
        self.design_tol = check_positive(name, "design_tol", p["design_tol"])
        if self.design_tol > 1:
            raise ConfigError(f"{name}: design_tol = {self.design_tol!r} is not allowed; "
                              "must be in (0, 1]")
        self.c_b = check_positive(name, "c_b", p["c_b"])
        self.log_arg = check_choice(name, "log_arg", p["log_arg"], LOG_ARGS)
        self.check_accounting(p, self.accounting)
        self.formal = self.c_b >= CB_THEORY and self.log_arg == "theory"
        power = p["gd_log_power"]
        if not isinstance(power, int) or isinstance(power, bool) or power < 0:
            raise ConfigError(f"{name}: gd_log_power = {power!r} is not allowed; must be an "
                              "integer >= 0")
        self.gd_log_power = power
        iters = p["gd_max_iters"]
        if not isinstance(iters, int) or isinstance(iters, bool) or iters < 1:
            raise ConfigError(f"{name}: gd_max_iters = {iters!r} is not allowed; must be an "
                              "integer >= 1")
        self.gd_max_iters = iters
        self.gd_step = check_choice(name, "gd_step", p["gd_step"], STEP_RULES)
        self.lambda_band = check_choice(name, "lambda_band", p["lambda_band"], LAMBDA_BANDS)
        self.psd_floor = check_bool(name, "psd_floor", p["psd_floor"])
        eps = float(self.epsilon)  # type: ignore[arg-type]
        self.eps_half, self.delta_half = eps / 2.0, delta / 2.0
        self.eps_sum = min(self.eps_half, MAX_EPSILON)
        self.log_term = math.log(2.0 * d * self.n_batches * T / delta)
        # batch state
        self.batch = 0  # 0-based index of the current batch
        self.buf_x = np.empty((max(self.lengths), d))
        self.buf_r = np.empty(max(self.lengths))
        self.buf_w = np.empty(max(self.lengths))
        self.n_buf = 0
        self.theta: list[np.ndarray] = []  # θ̂_1..θ̂_k
        self.gram_eig: list[tuple[np.ndarray, np.ndarray]] = []  # V, H_2.., as eigen-pairs
        self.batch_costs: list[tuple[float, float]] = []
        self.records: list[dict[str, float]] = []
        self.kept_counts: list[int] = []
        self._w_next = 1.0

    @classmethod
    def check_accounting(cls, params: dict[str, Any], accounting: str) -> None:
        """Strict accounting needs the vector-summation constants of the CJMP theorem."""
        c_b = params.get("c_b", CB_THEORY)
        log_arg = params.get("log_arg", "theory")
        if accounting == "strict" and (c_b is None or c_b < CB_THEORY or log_arg != "theory"):
            raise ConfigError(
                f"{cls.name}: c_b = {c_b!r}, log_arg = {log_arg!r} is not allowed with "
                f"accounting = strict; must be c_b >= {CB_THEORY:g} and log_arg = theory "
                "(other constants carry no guarantee: use accounting = paper)")

    # ------------------------------------------------------------------ parameters

    def _lambda(self, noise_sd: float) -> tuple[float, float, float]:
        """λ = 20dR ln T + σ̃(2 ln(2dMT/δ) + 4d) and its band λ_max, λ_min (spec §5.2)."""
        d, R, T = self.problem.d, self.problem.R, self.problem.horizon
        lam = self.lambda_base + noise_sd * (2.0 * self.log_term + 4.0 * d)
        if self.lambda_band == "sigma":
            band = noise_sd * (4.0 * d + 2.0 * self.log_term)
        else:
            delta = float(self.delta)  # type: ignore[arg-type]
            eps = float(self.epsilon)  # type: ignore[arg-type]
            band = (8.0 * R * math.log(d * d / delta) / (self.kappa_star * eps)) * (
                4.0 * d + 2.0 * math.log(2.0 * self.n_batches * T / delta))
        return lam, lam + band, max(lam - band, 1e-12)

    # ------------------------------------------------------------------ rounds

    def _weights(self, arms: np.ndarray) -> np.ndarray:
        """w(x) = μ̇(⟨x, θ̂₁⟩)/β(x), β(x) = exp(R·min(2S, γκ^p‖x‖_{V⁻¹})) (spec §5.3)."""
        vals, vecs = self.gram_eig[0]
        norm_v = np.sqrt(((arms @ vecs) ** 2 / vals).sum(axis=1))
        width = self.gamma * self.kappa**self.beta_power * norm_v
        beta = np.exp(self.problem.R * np.minimum(2.0 * self.problem.S, width))
        return self.link.dot(arms @ self.theta[0]) / beta

    def _survivors(self, arms: np.ndarray) -> np.ndarray:
        """Successive elimination with every earlier batch's estimate (spec §5.3)."""
        alive = np.arange(arms.shape[0])
        for j, (theta, (vals, vecs)) in enumerate(zip(self.theta, self.gram_eig, strict=True)):
            x = arms[alive]
            norm = np.sqrt(((x @ vecs) ** 2 / vals).sum(axis=1))
            width = self.gamma * (self.kappa**self.elim_power if j == 0 else 1.0) * norm
            centre = x @ theta
            alive = alive[centre + width >= np.max(centre - width)]
        return alive

    def _design_choice(self, points: np.ndarray) -> int:
        if points.shape[0] == 1:
            return 0
        weights = np.clip(g_optimal_design(points, tol=self.design_tol), 0.0, None)
        return int(self.rng.choice(points.shape[0], p=weights / weights.sum()))

    def prepare_arms(self, arms: np.ndarray) -> np.ndarray:
        """Strict: contexts are private data, clipped to the unit ball the summation assumes."""
        return clip_arms(arms) if self.accounting == "strict" else arms

    def select(self, t: int, arms: np.ndarray) -> int:
        if self.batch == 0:
            self._w_next = 1.0
            return self._design_choice(arms)
        alive = self._survivors(arms)
        self.kept_counts.append(alive.size)
        w = self._weights(arms[alive])
        scale = np.sqrt(w) if self.scale_sqrt else w
        i = self._design_choice(scale[:, None] * arms[alive])
        self._w_next = float(w[i])
        return int(alive[i])

    def update(self, t: int, x: np.ndarray, r: float) -> None:
        self.buf_x[self.n_buf], self.buf_r[self.n_buf] = x, r
        self.buf_w[self.n_buf] = self._w_next
        self.n_buf += 1
        if t + 1 == self.ends[self.batch]:
            if self.batch + 1 < len(self.lengths):
                self._end_batch()
            self.batch += 1
            self.n_buf = 0

    def _end_batch(self) -> None:
        """Private Gram matrix and P_GD estimate from this batch's data only (spec §5.3)."""
        n, d = self.n_buf, self.problem.d
        x, r, w = self.buf_x[:n], self.buf_r[:n], self.buf_w[:n]
        first = self.batch == 0
        bound = 1.0 if first else self.link.sup_dot
        dim = len(upper_indices(d)[0])
        noise_sd = vector_sum_params(n, dim, bound, self.eps_sum, self.delta_half,
                                     c_b=self.c_b, log_arg=self.log_arg).noise_sd
        lam, lam_max, lam_min = self._lambda(noise_sd)
        gram, params = sym_sum(x, None if first else w, bound, self.eps_sum, self.delta_half,
                               self.rng, c_b=self.c_b, log_arg=self.log_arg)
        gram[np.diag_indices(d)] += lam
        self.gram_eig.append(psd_repair(gram, lam_min if self.psd_floor else 1e-12))
        gd = shuffle_gd(x, r, self.link, S=self.problem.S, epsilon=self.eps_half,
                        delta=self.delta_half, lam_max=lam_max, R=self.problem.R, rng=self.rng,
                        log_power=self.gd_log_power, max_iters=self.gd_max_iters,
                        step_rule=self.gd_step, c_b=self.c_b, log_arg=self.log_arg)
        self.theta.append(gd.theta)
        gd_eps, gd_delta = compose(gd.eps_iter, gd.delta_iter, gd.iterations, self.delta_half)
        if self.formal and (gd_eps > self.eps_half * (1 + 1e-9)
                            or gd_delta > self.delta_half * (1 + 1e-9)):
            raise PrivacyBudgetError(f"P_GD composes to ({gd_eps:.6g}, {gd_delta:.3g}) > "
                                     f"({self.eps_half:.6g}, {self.delta_half:.3g})")
        self.batch_costs.append((self.eps_sum + gd_eps, self.delta_half + gd_delta))
        ledger = self.ledger
        assert ledger is not None
        k = self.batch + 1
        ledger.add("shuffle vector summation (SymSum)", f"batch {k} Gram matrix",
                   sensitivity=bound, noise_scale=params.noise_sd, epsilon=self.eps_sum,
                   delta=self.delta_half, partition=f"batch {k}",
                   note=f"n = {n}, D = {dim}, g = {params.g}, b = {params.b}")
        ledger.add("shuffle gradient descent (P_GD)", f"batch {k} estimate",
                   sensitivity=gd.grad_bound,
                   noise_scale=gd.params.noise_sd if gd.params else 0.0,
                   epsilon=gd_eps, delta=gd_delta, partition=f"batch {k}",
                   note=f"N = {gd.iterations} vector sums at ({gd.eps_iter:.6g}, "
                        f"{gd.delta_iter:.3g}) each")
        self.records.append({"batch": k, "n": n, "lambda": lam, "noise_sd": params.noise_sd,
                             "gd_iterations": gd.iterations, "gd_eps_iter": gd.eps_iter,
                             "theta_norm": float(np.linalg.norm(gd.theta))})

    # ------------------------------------------------------------------ reporting

    def finish(self) -> None:
        """Paper accounting with practical constants: no formal guarantee (a breach)."""
        if not self.formal:
            self.ledger.breach(  # type: ignore[union-attr]
                f"vector-summation constants c_b = {self.c_b:g}, log argument "
                f"{self.log_arg!r} are below those of the CJMP theorem: no formal guarantee")

    def events(self) -> dict[str, np.ndarray]:
        return {
            "batch_ends": np.asarray(self.ends, dtype=np.int64),
            "batch_n": np.asarray([r["n"] for r in self.records], dtype=np.int64),
            "batch_lambda": np.asarray([r["lambda"] for r in self.records], dtype=float),
            "batch_noise_sd": np.asarray([r["noise_sd"] for r in self.records], dtype=float),
            "gd_iterations": np.asarray([r["gd_iterations"] for r in self.records],
                                        dtype=np.int64),
            "survivors": np.asarray(self.kept_counts, dtype=np.int64),
        }

    def diagnostics(self) -> dict[str, float]:
        kept = np.asarray(self.kept_counts, dtype=float)
        return {
            "n_batches": float(len(self.lengths)),
            "warmup_length": float(self.lengths[0]),
            "alpha": float(self.alpha),
            "gamma": float(self.gamma),
            "mean_survivors": float(kept.mean()) if kept.size else math.nan,
            "formal_guarantee": float(self.formal),
        }
