"""P_GD, the shuffle-private projected gradient descent (docs/glm.md, "Algorithm 1")."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from dpbandits.links import get_link
from dpbandits.privacy.shuffle_gd import (
    clip_factor,
    gd_iterations,
    gradient_bound,
    shuffle_gd,
)
from dpbandits.privacy.split import compose
from dpbandits.privacy.vector_sum import EXACT_BINOMIAL_MAX, blanket_deviation

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


def reference_gd(X: np.ndarray, y: np.ndarray, link_name: str, theta: np.ndarray, iters: int,
                 lam_over_n: float, step: float, radius: float, bound: float, g: int,
                 trials: int, rng: np.random.Generator) -> np.ndarray:
    """P_GD's iterations in dense numpy: the clipped gradients, their rounded levels from
    `rng.random`, the blanket count, the step and the projection; the mean iterate."""
    link, n = get_link(link_name), X.shape[0]
    total = np.zeros_like(theta)
    for _ in range(iters):
        total += theta
        grads = (link.mean(X @ theta) - y)[:, None] * X + lam_over_n * theta
        norms = np.sqrt(np.einsum("ij,ij->i", grads, grads))
        grads = grads * np.minimum(1.0, bound / np.maximum(norms, 1e-300))[:, None]
        scaled = np.clip((grads + bound) * (g / bound), 0.0, 2.0 * g)
        base = np.floor(scaled)
        sums = (base + (rng.random(grads.shape) < scaled - base)).sum(axis=0)
        blanket = blanket_deviation(trials, 0.25, theta.size, rng)
        theta = theta - step * ((bound / g) * (sums + blanket) - n * bound) / n
        norm = np.sqrt(theta @ theta)
        theta = theta if norm <= radius else theta * (radius / norm)
    return total / iters


@pytest.mark.parametrize("family", ["logistic", "probit", "linear"])
def test_iterations_are_the_dense_formulas(family: str) -> None:
    """θ̂ against the dense numpy iterations (to rounding) and the generator's state after it,
    with estimates on and off the ball's edge, start points, both step rules, both
    vector-summation constants and blanket counts drawn in chunks; a generator one draw ahead
    gives another θ̂ (negative control)."""
    link, rng = get_link(family), np.random.default_rng(20)
    projected = chunked = 0
    for case in range(24):
        d, n = int(rng.integers(1, 6)), int(rng.integers(20, 400))
        x, y = _data(rng, rng.normal(size=d), n)
        kwargs = {"S": float(rng.choice([0.05, 2.0])), "epsilon": float(rng.choice([1.0, 8.0])),
                  "delta": 0.01, "lam_max": float(rng.uniform(1.0, 50.0)), "R": 1.0,
                  "theta0": rng.normal(size=d) if case % 2 else None,
                  "step_rule": ["Lg", "paper_L"][case % 3 == 0],
                  "c_b": [1.0, 64.0, 1e10][case % 4 == 0 or 2 * (case % 6 == 1)],
                  "log_arg": ["practical", "theory"][case % 5 == 0], "max_iters": 200}
        mine, numpys = np.random.default_rng(case), np.random.default_rng(case)
        out = shuffle_gd(x, y, link, rng=mine, **kwargs)
        start = np.zeros(d)
        if kwargs["theta0"] is not None:
            start = kwargs["theta0"] * min(1.0, kwargs["S"] / np.linalg.norm(kwargs["theta0"]))
        trials = out.params.n * out.params.b
        expected = reference_gd(x, y, family, start, out.iterations, kwargs["lam_max"] / n,
                                out.step, kwargs["S"], out.grad_bound, out.params.g, trials,
                                numpys)
        assert out.iterations > 1
        np.testing.assert_allclose(out.theta, expected, rtol=1e-9, atol=1e-12)
        assert mine.bit_generator.state == numpys.bit_generator.state
        projected += kwargs["S"] == 0.05
        chunked += trials > EXACT_BINOMIAL_MAX
        ahead = np.random.default_rng(case)
        ahead.random()
        assert shuffle_gd(x, y, link, rng=ahead, **kwargs).theta.tolist() != out.theta.tolist()
    assert projected > 5 and 0 < chunked < 24


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_data_are_refused(bad: float) -> None:
    """A NaN or infinite reward is refused before anything is drawn."""
    x, y = np.eye(3), np.array([0.0, bad, 1.0])
    rng = np.random.default_rng(1)
    before = rng.bit_generator.state
    with pytest.raises(ValueError, match="must be finite"):
        shuffle_gd(x, y, LOGISTIC, S=1.0, epsilon=1.0, delta=0.01, lam_max=1.0, R=1.0, rng=rng)
    assert rng.bit_generator.state == before


def test_clip_factor() -> None:
    assert clip_factor(0.5, 1.0) == 1.0 and clip_factor(4.0, 1.0) == 0.25
    assert clip_factor(0.0, 1.0) == 1.0 and clip_factor(1e-320, 1e-290) == 1.0


def test_the_iterations_record_their_exact_and_released_sums_and_follow_a_replay() -> None:
    """`exact` row 1 is Σ of the users' clipped gradients at θ = 0, `released` the P_vec
    outputs the iterates stepped with; replaying them gives the same iterates, replaying
    others moves them, and the draws are the same either way."""
    g = np.random.default_rng(3)
    x = g.standard_normal((60, 2)) / 2
    y = (g.random(60) < 0.5).astype(float)
    kwargs = dict(S=1.0, epsilon=20.0, delta=0.01, lam_max=5.0, R=1.0, max_iters=5)
    out = shuffle_gd(x, y, LOGISTIC, rng=np.random.default_rng(1), **kwargs)
    assert out.exact.shape == out.released.shape == (out.iterations, 2)
    grads = (0.5 - y)[:, None] * x  # μ(0) = 1/2, θ = 0
    scale = np.minimum(1.0, out.grad_bound / np.linalg.norm(grads, axis=1))
    np.testing.assert_allclose(out.exact[0], (grads * scale[:, None]).sum(axis=0))
    same = shuffle_gd(x, y, LOGISTIC, rng=np.random.default_rng(1), replay=out.released,
                      **kwargs)
    np.testing.assert_array_equal(same.theta, out.theta)
    moved = shuffle_gd(x, y, LOGISTIC, rng=np.random.default_rng(1),
                       replay=out.released + 1.0, **kwargs)
    assert not np.array_equal(moved.theta, out.theta)
    np.testing.assert_array_equal(moved.released[0], out.released[0])
