"""P_GD: shuffle-private projected gradient descent for the GLM loss (Cheu et al., ICLR 2022).

As used by the Private-GLM paper, Appendices E ("Convention bridging") and U; docs/glm.md,
"Algorithm 1".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpbandits.errors import ConfigError
from dpbandits.jit import jit
from dpbandits.linalg import dot, project_ball_into
from dpbandits.links import Link, mean
from dpbandits.privacy.split import split
from dpbandits.privacy.vector_sum import (
    CB_THEORY,
    MAX_EPSILON,
    VectorSumParams,
    blanket_draws,
    blanket_split,
    levels_of,
    rounded_level,
    vector_sum_params,
)

MAX_ITERS = 2000
STEP_RULES = ("Lg", "paper_L")


def gd_iterations(epsilon: float, delta: float, n: int, d: int, *, log_power: int = 3,
                  max_iters: int = MAX_ITERS) -> int:
    """N = max(1, ⌊ε²n²/(d ln^p(nd/δ))⌋), p = 3 (the paper's Section 5), capped."""
    log_term = math.log(n * d / delta)
    raw = epsilon * epsilon * n * n / (d * max(log_term, 1e-12) ** log_power)
    return int(max(1, min(max_iters, math.floor(raw))))


def gradient_bound(R: float, lam_max: float, S: float, n: int) -> float:
    """L_g = R + λ_max·S/n: the per-user gradient norm bound of ℓ̃ on the S-ball."""
    return R + lam_max * S / n


@dataclass
class PGDResult:
    """Output of P_GD and the budgets it ran at."""

    theta: np.ndarray
    iterations: int
    eps_iter: float
    delta_iter: float
    step: float
    grad_bound: float
    params: VectorSumParams | None
    eps_capped: bool
    exact: np.ndarray | None = None  # each iteration's Σ of the clipped gradients (N, d)
    released: np.ndarray | None = None  # each iteration's P_vec output ĝ (N, d)


def shuffle_gd(X: np.ndarray, y: np.ndarray, link: Link, *, S: float, epsilon: float,
               delta: float, lam_max: float, R: float, rng: np.random.Generator,
               theta0: np.ndarray | None = None, log_power: int = 3,
               max_iters: int = MAX_ITERS, step_rule: str = "Lg", c_b: float = CB_THEORY,
               log_arg: str = "theory", replay: np.ndarray | None = None) -> PGDResult:
    """P_GD on ℓ̃_t(θ) = ℓ(θ; x_t, r_t) + (λ_max/(2n))‖θ‖² over {‖θ‖ ≤ S} (paper App. E).

    Every iteration sums the users' clipped gradients with P_vec at (ε_i, δ_i) =
    split(ε, δ, N); the output is the mean of θ_1..θ_N. A per-iteration ε above CJMP's
    limit of 15 is lowered to 15 (less privacy loss than budgeted). With `replay` (N, d), the
    iterates follow those sums instead of the ones drawn (the release checks' neighbour run).
    """
    X = np.ascontiguousarray(X, dtype=float)
    y = np.ascontiguousarray(y, dtype=float)
    n, d = X.shape
    theta = np.zeros(d)
    if theta0 is not None:
        theta = np.array(theta0, dtype=float)
        project_ball_into(theta, float(S))
    if n == 0:
        return PGDResult(theta, 0, 0.0, 0.0, 0.0, 0.0, None, False)
    if not (np.isfinite(X).all() and np.isfinite(y).all()):
        raise ValueError("P_GD's data are not allowed; features and rewards must be finite")
    iters = gd_iterations(epsilon, delta, n, d, log_power=log_power, max_iters=max_iters)
    eps_i, delta_i = split(epsilon, delta, iters)
    capped = eps_i > MAX_EPSILON
    eps_i = min(eps_i, MAX_EPSILON)
    lg = gradient_bound(R, lam_max, S, n)
    lipschitz = lg if step_rule == "Lg" else R * S + S + S * lam_max / n
    step = 2.0 * S / (lipschitz * math.sqrt(iters))
    if step_rule not in STEP_RULES:
        raise ConfigError(f"step_rule = {step_rule!r} is not allowed; allowed: "
                          f"{', '.join(STEP_RULES)}")
    params = vector_sum_params(n, d, lg, eps_i, delta_i, c_b=c_b, log_arg=log_arg)
    chunks, rest = blanket_split(params.n * params.b)
    exact, released = np.zeros((iters, d)), np.zeros((iters, d))
    follow = np.zeros((0, d)) if replay is None else np.ascontiguousarray(replay, dtype=float)
    mean_theta = gd_steps(X, y, theta, iters, lam_max / n, step, float(S), params.bound,
                          levels_of(params), link.kind, chunks, rest, params.p, rng, exact,
                          released, follow)
    return PGDResult(mean_theta, iters, eps_i, delta_i, step, lg, params, capped, exact,
                     released)


@jit
def clip_factor(norm: float, bound: float) -> float:
    """min(1, L/max(‖v‖, 1e-300)): the factor that clips a user's vector to norm ≤ L."""
    return min(1.0, bound / max(norm, 1e-300))


@jit
def gd_steps(X: np.ndarray, y: np.ndarray, theta: np.ndarray, iterations: int,
             lam_over_n: float, step: float, radius: float, bound: float, g: int, kind: int,
             chunks: int, rest: int, p: float, rng: np.random.Generator, exact: np.ndarray,
             released: np.ndarray, follow: np.ndarray) -> np.ndarray:
    """P_GD's iterations from θ (changed in place): the mean of θ_1..θ_N (Cheu et al., App. U).

    Iteration: each user's gradient (μ(xᵀθ) − r)x + (λ_max/n)θ clipped to L_g, summed by P_vec
    (its rounding draws user by user, then the blanket count), θ ← Π_S(θ − η ĝ/n). Row k of
    `exact` gets iteration k's Σ of the clipped gradients, of `released` its ĝ; with rows in
    `follow`, θ steps with those instead of ĝ (the draws are made all the same).
    """
    n, d = X.shape
    total = np.zeros(d)
    grad = np.empty(d)
    levels = np.zeros(d, dtype=np.int64)
    scale = bound / g
    offset = n * bound
    for k in range(iterations):
        for c in range(d):
            total[c] += theta[c]
            levels[c] = 0
        for i in range(n):
            residual = mean(kind, dot(X[i], theta)) - y[i]
            for c in range(d):
                grad[c] = residual * X[i, c] + lam_over_n * theta[c]
            factor = clip_factor(math.sqrt(dot(grad, grad)), bound)
            for c in range(d):
                clipped = grad[c] * factor
                exact[k, c] += clipped
                levels[c] += rounded_level(clipped, bound, g, rng.random())
        blanket = blanket_draws(chunks, rest, p, d, rng)
        for c in range(d):
            g_hat = scale * (levels[c] + blanket[c]) - offset
            released[k, c] = g_hat
            if follow.shape[0] > 0:
                g_hat = follow[k, c]
            theta[c] = theta[c] - step * g_hat / n
        project_ball_into(theta, radius)
    for c in range(d):
        total[c] /= iterations
    return total
