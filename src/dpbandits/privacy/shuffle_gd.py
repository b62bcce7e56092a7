"""P_GD: shuffle-private projected gradient descent for the GLM loss (Cheu et al., ICLR 2022).

As used by the Private-GLM paper, Appendices E ("Convention bridging") and U; docs/glm.md,
"Algorithm 1".
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from dpbandits.errors import ConfigError
from dpbandits.links import Link, compiled_mean, compiled_mean_ufunc
from dpbandits.privacy import _shuffle
from dpbandits.privacy.dpsgd import project_ball
from dpbandits.privacy.split import split
from dpbandits.privacy.vector_sum import (
    CB_THEORY,
    MAX_EPSILON,
    VectorSumParams,
    blanket_deviation,
    compiled_levels,
    compiled_rows,
    vector_sum,
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


def shuffle_gd(X: np.ndarray, y: np.ndarray, link: Link, *, S: float, epsilon: float,
               delta: float, lam_max: float, R: float, rng: np.random.Generator,
               theta0: np.ndarray | None = None, log_power: int = 3,
               max_iters: int = MAX_ITERS, step_rule: str = "Lg", c_b: float = CB_THEORY,
               log_arg: str = "theory") -> PGDResult:
    """P_GD on ℓ̃_t(θ) = ℓ(θ; x_t, r_t) + (λ_max/(2n))‖θ‖² over {‖θ‖ ≤ S} (paper App. E).

    Every iteration sums the users' clipped gradients with P_vec at (ε_i, δ_i) =
    split(ε, δ, N); the output is the mean of θ_1..θ_N. A per-iteration ε above CJMP's
    limit of 15 is lowered to 15 (less privacy loss than budgeted).
    """
    n, d = X.shape
    theta = np.zeros(d) if theta0 is None else project_ball(np.array(theta0, float), S)
    if n == 0:
        return PGDResult(theta, 0, 0.0, 0.0, 0.0, 0.0, None, False)
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
    total = np.zeros(d)
    theta, done = compiled_steps(X, y, theta, total, iters, lam_max / n, step, S, link, params,
                                 rng)
    for _ in range(done, iters):
        total += theta
        grads = (link.mean(X @ theta) - y)[:, None] * X + (lam_max / n) * theta
        grads = clipped_gradients_rows(grads, lg)
        g_hat = vector_sum(grads, params, rng)
        theta = project_ball(theta - step * g_hat / n, S)
    return PGDResult(total / iters, iters, eps_i, delta_i, step, lg, params, capped)


def compiled_steps(X: np.ndarray, y: np.ndarray, theta: np.ndarray, total: np.ndarray,
                   iters: int, lam_over_n: float, step: float, S: float, link: Link,
                   params: VectorSumParams, rng: np.random.Generator
                   ) -> tuple[np.ndarray, int]:
    """P_GD's iterations compiled (`_shuffle.gd_steps`, the bits and draws of the loop in
    `shuffle_gd`: tests/privacy/test_shuffle_gd.py), adding each θ to `total`: (θ, iterations
    made). None are made for arrays or constants it does not take or a link whose mean is not
    a ufunc; it stops before an iteration whose clipped gradients are NaN or above the bound.
    The loop in `shuffle_gd` makes the rest."""
    if not (compiled_mean(link) and isinstance(rng, np.random.Generator) and compiled_rows(X)
            and isinstance(y, np.ndarray) and y.dtype == np.float64 and y.flags.c_contiguous
            and y.flags.aligned and compiled_levels(params) and params.bound > 0):
        return theta, 0
    blanket = functools.partial(blanket_deviation, params.n * params.b, params.p, params.dim,
                                rng)
    return _shuffle.gd_steps(X, y, np.ascontiguousarray(theta, dtype=float), total, iters,
                             lam_over_n, step, S, params.bound, int(params.g),
                             compiled_mean_ufunc(link), rng, blanket)


def clipped_gradients_rows(grads: np.ndarray, bound: float) -> np.ndarray:
    """Scale each row down to norm ≤ bound: by min(1, bound/max(‖row‖, 1e-300)) (compiled in
    `_shuffle.clip_rows` for C-ordered aligned float64 rows, numpy's arithmetic)."""
    if (grads.ndim == 2 and grads.size and grads.dtype == np.float64
            and grads.flags.c_contiguous and grads.flags.aligned):
        out = grads.copy()
        _shuffle.clip_rows(out, float(bound))
        return out
    norms = np.sqrt(np.einsum("ij,ij->i", grads, grads))
    return grads * np.minimum(1.0, bound / np.maximum(norms, 1e-300))[:, None]

