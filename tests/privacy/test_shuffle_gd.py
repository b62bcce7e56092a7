"""P_GD, the shuffle-private projected gradient descent (docs/glm.md, "Algorithm 1")."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from dpbandits.links import get_link
from dpbandits.privacy.shuffle_gd import gd_iterations, gradient_bound, shuffle_gd
from dpbandits.privacy.split import compose

LOGISTIC = get_link("logistic")


def test_iteration_count() -> None:
    # ε = 1, n = 100, d = 3, δ = 0.01: 1e4/(3 ln³(3e4)) = 3.1938… → 3 (ln: 1e4/(3·10.309) → 323)
    assert gd_iterations(1.0, 0.01, 100, 3) == 3
    assert gd_iterations(1.0, 0.01, 100, 3, log_power=1) == 323
    assert gd_iterations(0.01, 0.01, 10, 3) == 1
    assert gd_iterations(10.0, 0.01, 10_000, 3) == 2000  # the cap
    assert gradient_bound(1.0, 50.0, 2.0, 100) == pytest.approx(2.0)


def _data(rng: np.random.Generator, theta: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    x = rng.normal(size=(n, theta.size))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    x *= rng.random((n, 1)) ** (1 / theta.size)
    y = (rng.random(n) < LOGISTIC.mean(x @ theta)).astype(float)
    return x, y


def test_budget_and_ball() -> None:
    rng = np.random.default_rng(0)
    x, y = _data(rng, np.array([1.0, -1.0, 0.5]), 400)
    for eps in (0.5, 2.0):
        out = shuffle_gd(x, y, LOGISTIC, S=1.0, epsilon=eps, delta=0.01, lam_max=5.0, R=1.0,
                         rng=rng)
        assert np.linalg.norm(out.theta) <= 1.0 + 1e-12
        assert out.iterations == gd_iterations(eps, 0.01, 400, 3)
        total = compose(out.eps_iter, out.delta_iter, out.iterations, 0.01)
        assert total[0] <= eps * (1 + 1e-12) and total[1] <= 0.01 * (1 + 1e-12)
        assert out.step == pytest.approx(2.0 / (out.grad_bound * math.sqrt(out.iterations)))


def test_huge_epsilon_approaches_the_regularised_mle() -> None:
    rng = np.random.default_rng(1)
    theta_star = np.array([1.0, -0.8, 0.4])
    n, lam = 2000, 20.0
    x, y = _data(rng, theta_star, n)

    def objective(t: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ t
        f = np.sum(LOGISTIC.potential(z) - y * z) + 0.5 * lam * t @ t
        return f, x.T @ (LOGISTIC.mean(z) - y) + lam * t

    mle = minimize(objective, np.zeros(3), jac=True, method="L-BFGS-B").x
    assert np.linalg.norm(mle) < 3.0  # interior of the ball below
    out = shuffle_gd(x, y, LOGISTIC, S=3.0, epsilon=1e6, delta=0.01, lam_max=lam, R=1.0,
                     rng=rng, c_b=1.0, log_arg="practical")
    assert out.iterations == 2000
    # averaged projected GD on the mean loss: F(θ̄) − F(θ̂) ≤ 2S·L_g/√N (noise negligible here)
    gap = (objective(out.theta)[0] - objective(mle)[0]) / n
    assert 0 <= gap <= 2 * 3.0 * out.grad_bound / math.sqrt(out.iterations)
    assert gap < 0.02 * (objective(np.zeros(3))[0] - objective(mle)[0]) / n
    assert np.linalg.norm(out.theta - mle) < 0.1 * np.linalg.norm(mle)
