"""Shuffle-GLM: the batched shuffle-DP algorithm for stochastic contexts (Private-GLM, Alg. 1).

No reference code exists; every choice of our reconstruction is a named parameter (docs/glm.md).
Batch 1 plays a G-optimal design on each round's arms; later batches eliminate with every
earlier estimate, rescale the survivors by μ̇(⟨x, θ̂₁⟩)/β(x) and play a G-optimal design on
them. At the end of a batch its data (only) give a shuffle-private Gram matrix (vector
summation) and a shuffle-private estimate (P_GD), each at (ε/2, δ/2). Batches involve disjoint
users, so the per-user guarantee is (ε, δ) by parallel composition: the ledger has one
partition per batch. Strict accounting requires the constants of the CJMP theorem.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

import numpy as np

from dpbandits.audit.spec import GLM_PAIR, UNIT_NORMS, PolicyAudit
from dpbandits.contract import OutcomeTables, ProblemInfo
from dpbandits.design import MAX_ITER as DESIGN_MAX_ITER
from dpbandits.design import design_of, draw_index, within_bound
from dpbandits.errors import ConfigError, PrivacyBudgetError
from dpbandits.jit import jit
from dpbandits.linalg import dot
from dpbandits.links import get_link, mean_dot
from dpbandits.params import Declaration, boolean, choice, integer, number
from dpbandits.policies.base import Policy
from dpbandits.policies.tables import pull
from dpbandits.privacy.release import Drawn, release, upcoming
from dpbandits.privacy.shuffle_gd import MAX_ITERS, STEP_RULES, PGDResult, shuffle_gd
from dpbandits.privacy.split import compose
from dpbandits.privacy.tree import psd_repair
from dpbandits.privacy.vector_sum import (
    CB_THEORY,
    LOG_ARGS,
    MAX_EPSILON,
    VectorSumParams,
    sym_vectors,
    upper_indices,
    vector_sum,
    vector_sum_epsilon,
    vector_sum_params,
)

GROWTH_RULES = ("sqrt", "linear")
LAMBDA_BANDS = ("sigma", "kappa_star")


def n_batches_default(horizon: int) -> int:
    """M = ⌈log2 log2 T⌉ + 1 (the Private-GLM paper, Appendix F: at most log log T batches)."""
    return math.ceil(math.log2(max(math.log2(max(horizon, 2)), 1.0))) + 1


def alpha_default(horizon: int, n_batches: int) -> float:
    """α = T^{1/(2(1 − 2^{1−M}))}: the nominal last batch then has length T.

    Batch lengths as in the Private-GLM paper, Section 5; α is ours (docs/glm.md, "Algorithm 1").
    """
    return horizon ** (1.0 / (2.0 * (1.0 - 2.0 ** (1 - n_batches))))


def warmup_length(horizon: int, d: int, S: float, kappa: float, gamma: float, alpha: float,
                  cap: bool) -> int:
    """B₁ = ⌈((κ e^{3S} d² γ²/S)·α)^{2/3}⌉, capped at min(·, max(10d², ⌈√T⌉), ⌊T/4⌋).

    The formula is Private-GLM paper, Section 5 ("Batch structure"); the cap is ours.
    """
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


def pgd_cost(iterations: int, delta_total: float) -> Callable[[Drawn], dict[str, float]]:
    """The ledger cost of P_GD: N vector sums at the (ε_i, δ_i) of the protocol drawn (its b
    solved for ε), composed as `split` planned them (Private-GLM paper, Appendix E)."""

    def cost(drawn: Drawn) -> dict[str, float]:
        eps, delta = compose(vector_sum_epsilon(drawn.detail), drawn.detail.delta, iterations,
                             delta_total)
        return {"epsilon": eps, "delta": delta}

    return cost


class Estimates(NamedTuple):
    """The estimates of the batches so far, stacked for the rounds' kernels: θ̂_j (M, d), the
    eigen-pairs of V₁, H₂, … ((M, d) values, (M, d, d) vectors as columns) and each
    elimination width's scale γκ^p (j = 1) or γ (M,); the first `count` rows are made."""

    theta: np.ndarray
    vals: np.ndarray
    vecs: np.ndarray
    scale: np.ndarray


class Rule(NamedTuple):
    """The constants of a round's action: β's scale γκ^p and cap 2S, R, the link's kind,
    √w (else w) scaling, and the design's tolerance and step cap."""

    beta_scale: float
    max_width: float
    reward_bound: float
    kind: int
    scale_sqrt: bool
    tol: float
    max_iter: int


@jit
def inverse_norm_eig(vals: np.ndarray, vecs: np.ndarray, x: np.ndarray) -> float:
    """‖x‖_{V⁻¹} = √(Σ_c (xᵀq_c)²/λ_c) from the eigen-pairs (λ_c, q_c) of V."""
    total = 0.0
    for c in range(vals.shape[0]):
        along = 0.0
        for i in range(x.shape[0]):
            along += x[i] * vecs[i, c]
        total += along * along / vals[c]
    return math.sqrt(total)


@jit
def survivors(arms: np.ndarray, est: Estimates, count: int, alive: np.ndarray) -> int:
    """Successive elimination with every earlier batch's estimate (Private-GLM paper, Sec. 5):
    estimate j keeps the x with ⟨x, θ̂_j⟩ + w_j(x) ≥ max_y ⟨y, θ̂_j⟩ − w_j(y), w_j(x) =
    scale_j·‖x‖_{V_j⁻¹}; the indices kept go to alive[:m], m returned."""
    m = arms.shape[0]
    for a in range(m):
        alive[a] = a
    centre = np.empty(m)
    width = np.empty(m)
    for j in range(count):
        floor = -np.inf
        for a in range(m):
            x = arms[alive[a]]
            centre[a] = dot(x, est.theta[j])
            width[a] = est.scale[j] * inverse_norm_eig(est.vals[j], est.vecs[j], x)
            floor = max(floor, centre[a] - width[a])
        kept = 0
        for a in range(m):
            if centre[a] + width[a] >= floor:
                alive[kept] = alive[a]
                kept += 1
        m = kept
    return m


@jit
def arm_weight(x: np.ndarray, est: Estimates, count: int, rule: Rule) -> float:
    """w(x) = μ̇(⟨x, θ̂₁⟩)/β(x), β(x) = exp(R·min(2S, γκ^p‖x‖_{V₁⁻¹})) (Private-GLM paper,
    Sec. 5); 1 before the first estimate."""
    if count == 0:
        return 1.0
    width = rule.beta_scale * inverse_norm_eig(est.vals[0], est.vecs[0], x)
    beta = math.exp(rule.reward_bound * min(rule.max_width, width))
    return mean_dot(rule.kind, dot(x, est.theta[0])) / beta


@jit
def design_points(arms: np.ndarray, alive: np.ndarray, m: int, est: Estimates, count: int,
                  rule: Rule) -> np.ndarray:
    """The design points √w(x)·x (w(x)·x without scale_sqrt) of the survivors alive[:m]."""
    points = np.empty((m, arms.shape[1]))
    for a in range(m):
        x = arms[alive[a]]
        w = arm_weight(x, est, count, rule)
        factor = math.sqrt(w) if rule.scale_sqrt else w
        for i in range(x.shape[0]):
            points[a, i] = factor * x[i]
    return points


@jit
def shuffle_glm_arm(arms: np.ndarray, est: Estimates, count: int, rule: Rule,
                    rng: np.random.Generator, candidates: np.ndarray) -> int:
    """Algorithm 1's action (Private-GLM paper, Sec. 5): a draw from the G-optimal design on the
    arms (batch 1), else on the rescaled survivors of elimination by the earlier estimates (a
    single candidate without a draw); candidates[0] ← the number of arms drawn from."""
    k = arms.shape[0]
    alive = np.empty(k, dtype=np.int64)
    for a in range(k):
        alive[a] = a
    points = arms
    if count > 0:
        k = survivors(arms, est, count, alive)
        points = design_points(arms, alive, k, est, count, rule)
    candidates[0] = k
    if k == 1:
        return alive[0]
    design, basis, g, _ = design_of(points, rule.tol, rule.max_iter)
    if not within_bound(g, basis.shape[0]):
        raise RuntimeError("the G-optimal design failed: g > 2k or no direction spanned")
    return alive[draw_index(design, rng)]


@jit
def record(xs: np.ndarray, rewards: np.ndarray, weights: np.ndarray, n: int, x: np.ndarray,
           r: float, w: float) -> None:
    """The batch's n-th round: its (x, r) and w(x), the data of the batch's releases."""
    for i in range(x.shape[0]):
        xs[n, i] = x[i]
    rewards[n] = r
    weights[n] = w


@jit
def shuffle_glm_rounds(start: int, stop: int, tables: OutcomeTables, est: Estimates,
                       count: int, rule: Rule, rng: np.random.Generator, xs: np.ndarray,
                       rewards: np.ndarray, weights: np.ndarray, drawn_from: np.ndarray
                       ) -> None:
    """Rounds start … stop − 1 (one batch) of Algorithm 1 on pre-drawn tables."""
    candidates = np.zeros(1, dtype=np.int64)
    for t in range(start, stop):
        arms = tables.arms[t]
        i = shuffle_glm_arm(arms, est, count, rule, rng, candidates)
        record(xs, rewards, weights, t - start, arms[i], pull(tables, t, i),
               arm_weight(arms[i], est, count, rule))
        drawn_from[t] = candidates[0]


class ShuffleGLM(Policy):
    """Algorithm 1 (docs/glm.md, "Algorithm 1"). The paper gives no code; every reconstructed
    choice is a declared parameter (`dpbandits list algorithms`)."""

    name: ClassVar[str] = "Shuffle-GLM"
    audits: ClassVar[tuple[PolicyAudit, ...]] = (PolicyAudit(
        name="Shuffle-GLM@context", policy=name, instance={**GLM_PAIR, "S": 2.0, "horizon": 100},
        pair="context", paper_params={"c_b": 1.0, "log_arg": "practical"},
        arm_norms=UNIT_NORMS, rewards=(1.0, 0.0), default_runs=200, epsilon=1.0, delta=0.02,
        note="paper mode with the practical vector-summation constants, as configured"),)
    private: ClassVar[bool] = True
    plays_tables: ClassVar[bool] = True
    decision_rule = staticmethod(shuffle_glm_arm)
    update_rule = staticmethod(record)
    families: ClassVar[tuple[str, ...]] = ("logistic", "probit")
    parameters: ClassVar[Declaration] = (
        integer("n_batches", None, "number of batches M (null: ⌈log2 log2 T⌉ + 1)", ge=1,
                nullable=True),
        number("alpha", None, "batch growth α (null: T^(1/(2(1 − 2^(1−M)))))", gt=0,
               nullable=True),
        boolean("warmup_cap", True, "cap B₁ at min(·, max(10d², ⌈√T⌉), ⌊T/4⌋)"),
        integer("warmup_length", None, "B₁ (null: the paper's formula, capped)", ge=1,
                nullable=True),
        choice("batch_growth", "sqrt", "B_k = ⌈α√B_(k−1)⌉ (sqrt) or ⌈αB_(k−1)⌉ (linear)",
               GROWTH_RULES),
        number("elim_kappa_power", 0.5, "first elimination width γκ^p‖x‖_(V⁻¹)", ge=0),
        number("beta_kappa_power", 0.5, "β(x) = exp(R·min(2S, γκ^p‖x‖_(V⁻¹)))", ge=0),
        boolean("scale_sqrt", True, "x̃ = √w·x (else w·x)"),
        number("design_tol", 0.05, "G-optimal design tolerance", gt=0, le=1),
        number("c_b", CB_THEORY, "vector-summation constant (below CJMP's: paper accounting "
               "only)", gt=0),
        choice("log_arg", "theory", "vector-summation log argument: theory 4(D²+1)/δ or "
               "practical D/δ", LOG_ARGS),
        number("gamma", None, "elimination width γ (null: R·S·√(d ln(T/δ)))", gt=0,
               nullable=True),
        number("lambda_base", None, "noise-free part of λ (null: 20dR ln T)", ge=0,
               nullable=True),
        integer("gd_log_power", 3, "P_GD iterations N ∝ 1/ln^p", ge=0),
        integer("gd_max_iters", MAX_ITERS, "cap on the P_GD iterations", ge=1),
        choice("gd_step", "Lg", "P_GD step: 2S/(L_g√N) (Lg) or the paper's L (paper_L)",
               STEP_RULES),
        choice("lambda_band", "sigma", "λ_max/min = λ ± σ̃(4d + 2 ln(2dMT/δ)) (sigma) or the "
               "κ*-based band", LAMBDA_BANDS),
        boolean("psd_floor", False, "clip the eigenvalues of V, H_k at λ_min (else 1e-12)"),
    )

    def __init__(self, problem: ProblemInfo, rng: np.random.Generator, **kwargs: Any) -> None:
        super().__init__(problem, rng, **kwargs)
        p, name = self.params, self.name
        T, d, S, R = problem.horizon, problem.d, problem.S, problem.R
        self.link = get_link(problem.family)
        self.kappa, self.kappa_star = problem.kappa_pub, problem.kappa_star_pub
        m = p["n_batches"]
        self.n_batches = n_batches_default(T) if m is None else m
        alpha = p["alpha"]
        self.alpha = alpha_default(T, self.n_batches) if alpha is None else float(alpha)
        gamma = p["gamma"]
        delta = float(self.delta)  # type: ignore[arg-type]
        self.gamma = (R * S * math.sqrt(d * math.log(T / delta)) if gamma is None
                      else float(gamma))
        base = p["lambda_base"]
        self.lambda_base = 20.0 * d * R * math.log(T) if base is None else float(base)
        first = p["warmup_length"]
        if first is None:
            first = warmup_length(T, d, S, self.kappa, self.gamma, self.alpha, p["warmup_cap"])
        elif first > T:
            raise ConfigError(f"{name}: warmup_length = {first!r} is not allowed; must be an "
                              f"integer in [1, {T}] or null")
        self.lengths = batch_schedule(T, first, self.alpha, self.n_batches, p["batch_growth"])
        self.ends = np.cumsum(self.lengths)
        self.elim_power = float(p["elim_kappa_power"])
        self.beta_power = float(p["beta_kappa_power"])
        self.scale_sqrt = p["scale_sqrt"]
        self.design_tol = float(p["design_tol"])
        self.c_b = float(p["c_b"])
        self.log_arg = p["log_arg"]
        self.formal = self.c_b >= CB_THEORY and self.log_arg == "theory"
        self.gd_log_power = p["gd_log_power"]
        self.gd_max_iters = p["gd_max_iters"]
        self.gd_step = p["gd_step"]
        self.lambda_band = p["lambda_band"]
        self.psd_floor = p["psd_floor"]
        eps = float(self.epsilon)  # type: ignore[arg-type]
        self.eps_half, self.delta_half = eps / 2.0, delta / 2.0
        self.eps_sum = min(self.eps_half, MAX_EPSILON)
        self.log_term = math.log(2.0 * d * self.n_batches * T / delta)
        # batch state
        self.batch = 0  # 0-based index of the current batch
        longest, batches = max(self.lengths), len(self.lengths)
        self.buf_x = np.empty((longest, d))
        self.buf_r = np.empty(longest)
        self.buf_w = np.empty(longest)
        self.n_buf = 0
        self.estimates = Estimates(np.zeros((batches, d)), np.ones((batches, d)),
                                   np.zeros((batches, d, d)), np.zeros(batches))
        self.count = 0  # estimates made: θ̂_1..θ̂_count
        self.rule = Rule(self.gamma * self.kappa**self.beta_power, 2.0 * S, float(R),
                         self.link.kind, bool(self.scale_sqrt), self.design_tol,
                         DESIGN_MAX_ITER)
        self.candidates = np.zeros(1, dtype=np.int64)  # the arms the last action was drawn from
        self.drawn_from = np.zeros(T, dtype=np.int64)  # the number of arms of each round
        self.batch_costs: list[tuple[float, float]] = []
        self.records: list[dict[str, float]] = []

    @classmethod
    def check_combined(cls, params: dict[str, Any], accounting: str) -> None:
        """Strict accounting needs the vector-summation constants of the CJMP theorem."""
        c_b, log_arg = params["c_b"], params["log_arg"]
        if accounting == "strict" and (c_b < CB_THEORY or log_arg != "theory"):
            raise ConfigError(
                f"{cls.name}: c_b = {c_b!r}, log_arg = {log_arg!r} is not allowed with "
                f"accounting = strict; must be c_b >= {CB_THEORY:g} and log_arg = theory "
                "(other constants carry no guarantee: use accounting = paper)")

    # ------------------------------------------------------------------ parameters

    def _lambda(self, noise_sd: float) -> tuple[float, float, float]:
        """λ = 20dR ln T + σ̃(2 ln(2dMT/δ) + 4d) and its band λ_max, λ_min.

        Private-GLM paper, Appendix E.1 (λ, and the κ* band) and F.1 (the σ̃ band).
        """
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

    @property
    def theta(self) -> list[np.ndarray]:
        """The batch estimates θ̂_1..θ̂_k made so far."""
        return list(self.estimates.theta[:self.count])

    @property
    def clips_contexts(self) -> bool:
        """Strict: contexts are private data, clipped to the unit ball the summation assumes."""
        return self.accounting == "strict"

    def select(self, t: int, arms: np.ndarray) -> int:
        return shuffle_glm_arm(np.ascontiguousarray(arms, dtype=float), self.estimates,
                               self.count, self.rule, self.rng, self.candidates)

    def update(self, t: int, x: np.ndarray, r: float) -> None:
        x = np.ascontiguousarray(x, dtype=float)
        record(self.buf_x, self.buf_r, self.buf_w, self.n_buf, x, float(r),
               arm_weight(x, self.estimates, self.count, self.rule))
        self.drawn_from[t] = self.candidates[0]
        self.n_buf += 1
        if t + 1 == self.ends[self.batch]:
            self._close_batch()

    def play_table(self, tables: OutcomeTables) -> None:
        start = 0
        for stop in self.ends:
            shuffle_glm_rounds(int(start), int(stop), tables, self.estimates, self.count,
                               self.rule, self.rng, self.buf_x, self.buf_r, self.buf_w,
                               self.drawn_from)
            self.n_buf = int(stop - start)
            self._close_batch()
            start = stop

    def _close_batch(self) -> None:
        """The batch's releases (all batches but the last), then the next batch."""
        if self.batch + 1 < len(self.lengths):
            self._end_batch()
        self.batch += 1
        self.n_buf = 0

    def _end_batch(self) -> None:
        """Private Gram matrix and P_GD estimate from this batch's data only (paper Sec. 5)."""
        n, d = self.n_buf, self.problem.d
        x, r, w = self.buf_x[:n], self.buf_r[:n], self.buf_w[:n]
        first = self.batch == 0
        bound = 1.0 if first else self.link.sup_dot
        dim = len(upper_indices(d)[0])
        noise_sd = vector_sum_params(n, dim, bound, self.eps_sum, self.delta_half,
                                     c_b=self.c_b, log_arg=self.log_arg).noise_sd
        lam, lam_max, lam_min = self._lambda(noise_sd)
        k = self.batch + 1
        gram, params = self._gram(x, None if first else w, bound, k)
        gram[np.diag_indices(d)] += lam
        vals, vecs = psd_repair(gram, lam_min if self.psd_floor else 1e-12)
        gd = shuffle_gd(x, r, self.link, S=self.problem.S, epsilon=self.eps_half,
                        delta=self.delta_half, lam_max=lam_max, R=self.problem.R, rng=self.rng,
                        log_power=self.gd_log_power, max_iters=self.gd_max_iters,
                        step_rule=self.gd_step, c_b=self.c_b, log_arg=self.log_arg,
                        replay=upcoming())
        self._release_estimate(gd, k)
        est, j = self.estimates, self.count
        est.theta[j], est.vals[j], est.vecs[j] = gd.theta, vals, vecs
        est.scale[j] = self.gamma * (self.kappa**self.elim_power if j == 0 else 1.0)
        self.count += 1
        gd_eps, gd_delta = compose(gd.eps_iter, gd.delta_iter, gd.iterations, self.delta_half)
        if self.formal and (gd_eps > self.eps_half * (1 + 1e-9)
                            or gd_delta > self.delta_half * (1 + 1e-9)):
            raise PrivacyBudgetError(f"P_GD composes to ({gd_eps:.6g}, {gd_delta:.3g}) > "
                                     f"({self.eps_half:.6g}, {self.delta_half:.3g})")
        self.batch_costs.append((self.eps_sum + gd_eps, self.delta_half + gd_delta))
        self.records.append({"batch": k, "n": n, "lambda": lam, "noise_sd": params.noise_sd,
                             "gd_iterations": gd.iterations, "gd_eps_iter": gd.eps_iter,
                             "theta_norm": float(np.linalg.norm(gd.theta))})

    def _gram(self, x: np.ndarray, weights: np.ndarray | None, bound: float,
              k: int) -> tuple[np.ndarray, VectorSumParams]:
        """SymSum (CJMP): Σ_u w_u x_u x_uᵀ of batch k, its upper triangle released by P_vec
        at (ε/2, δ/2) through `privacy.release`; ℓ2 sensitivity 2L (one user's vector of norm
        ≤ L replaced)."""
        vectors, rows, cols = sym_vectors(x, weights)
        n, dim = vectors.shape
        params = vector_sum_params(n, dim, bound, self.eps_sum, self.delta_half, c_b=self.c_b,
                                   log_arg=self.log_arg)
        est = release(None, self.ledger, vectors.sum(axis=0), name=f"batch {k} Gram matrix",
                      mechanism="vector-sum", sensitivity=2.0 * bound, scale=math.nan,
                      partition=f"batch {k}", ledger_mechanism="shuffle vector summation "
                      "(SymSum)", note=f"n = {n}, D = {dim}, g = {params.g}, b = {params.b}",
                      sample=lambda: (vector_sum(vectors, params, self.rng), params))
        out = np.zeros((x.shape[1], x.shape[1]))
        out[rows, cols] = est
        out[cols, rows] = est
        return out, params

    def _release_estimate(self, gd: PGDResult, k: int) -> None:
        """P_GD's N gradient sums of batch k as one release (ℓ2 sensitivity 2L_g√N: each sum
        moves by at most 2L_g when one user's clipped gradient is replaced)."""
        if gd.params is None:
            return
        release(None, self.ledger, gd.exact, name=f"batch {k} estimate",
                mechanism="vector-sum", sensitivity=2.0 * gd.grad_bound * math.sqrt(gd.iterations),
                scale=math.nan, partition=f"batch {k}",
                ledger_mechanism="shuffle gradient descent (P_GD)",
                note=f"N = {gd.iterations} vector sums at ({gd.eps_iter:.6g}, "
                     f"{gd.delta_iter:.3g}) each, L_g = {gd.grad_bound:.6g}",
                cost=pgd_cost(gd.iterations, self.delta_half),
                sample=lambda: (gd.released, gd.params))

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
            "survivors": self.drawn_from[self.ends[0]:].copy(),
        }

    def diagnostics(self) -> dict[str, float]:
        kept = self.drawn_from[self.ends[0]:].astype(float)
        return {
            "n_batches": float(len(self.lengths)),
            "warmup_length": float(self.lengths[0]),
            "alpha": float(self.alpha),
            "gamma": float(self.gamma),
            "mean_survivors": float(kept.mean()) if kept.size else math.nan,
            "formal_guarantee": float(self.formal),
        }
