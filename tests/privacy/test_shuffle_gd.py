"""P_GD, the shuffle-private projected gradient descent (docs/glm.md, "Algorithm 1")."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from dpbandits.links import get_link
from dpbandits.privacy import _shuffle
from dpbandits.privacy import shuffle_gd as shuffle_gd_module
from dpbandits.privacy.shuffle_gd import (
    compiled_steps,
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


def numpy_gd(monkeypatch: pytest.MonkeyPatch, *args: object, **kwargs: object) -> object:
    """`shuffle_gd` with every iteration made by its numpy loop."""
    with monkeypatch.context() as patch:
        patch.setattr(shuffle_gd_module, "compiled_steps",
                      lambda X, y, theta, *rest: (theta, 0))
        return shuffle_gd(*args, **kwargs)


@pytest.mark.parametrize("family", ["logistic", "probit", "linear"])
def test_compiled_iterations_are_the_numpy_loops(monkeypatch: pytest.MonkeyPatch,
                                                 family: str) -> None:
    """θ̂ bit for bit and the generator's state after it, with estimates on and off the ball's
    edge, start points, both step rules, both vector-summation constants and blanket counts
    drawn in chunks; a generator one draw ahead gives another θ̂ (negative control)."""
    link, rng = get_link(family), np.random.default_rng(20)
    projected, chunked = 0, []
    for case in range(24):
        d, n = int(rng.integers(1, 6)), int(rng.integers(20, 400))
        x, y = _data(rng, rng.normal(size=d), n)
        kwargs = {"S": float(rng.choice([0.05, 2.0])), "epsilon": float(rng.choice([1.0, 8.0])),
                  "delta": 0.01, "lam_max": float(rng.uniform(1.0, 50.0)), "R": 1.0,
                  "theta0": rng.normal(size=d) if case % 2 else None,
                  "step_rule": ["Lg", "paper_L"][case % 3 == 0],
                  "c_b": [1.0, 64.0, 1e10][case % 4 == 0 or 2 * (case % 6 == 1)],
                  "log_arg": ["practical", "theory"][case % 5 == 0]}
        mine, numpys = np.random.default_rng(case), np.random.default_rng(case)
        made: list[int] = []

        def counted(*args: object, made: list[int] = made) -> tuple[np.ndarray, int]:
            found = compiled_steps(*args)
            made.append(found[1])
            return found

        def blanket(trials: int, *args: object) -> np.ndarray:
            chunked.append(trials > EXACT_BINOMIAL_MAX)
            return blanket_deviation(trials, *args)

        with monkeypatch.context() as patch:
            patch.setattr(shuffle_gd_module, "compiled_steps", counted)
            patch.setattr(shuffle_gd_module, "blanket_deviation", blanket)
            out = shuffle_gd(x, y, link, rng=mine, **kwargs)
        expected = numpy_gd(monkeypatch, x, y, link, rng=numpys, **kwargs)
        assert made == [out.iterations] and out.iterations > 1  # all made compiled
        assert out.theta.tobytes() == expected.theta.tobytes()
        assert mine.bit_generator.state == numpys.bit_generator.state
        projected += kwargs["S"] == 0.05
        ahead = np.random.default_rng(case)
        ahead.random()
        assert shuffle_gd(x, y, link, rng=ahead, **kwargs).theta.tobytes() != out.theta.tobytes()
    assert projected > 5 and any(chunked) and not all(chunked)


def test_compiled_iterations_leave_nan_gradients_to_numpy() -> None:
    """A NaN reward makes the first iteration's gradients NaN: no iteration is made, nothing
    is drawn and the total is untouched (the numpy loop then makes them all)."""
    x = np.eye(3)
    y = np.array([0.0, np.nan, 1.0])
    rng = np.random.default_rng(1)
    before, total = rng.bit_generator.state, np.zeros(3)
    theta, done = _shuffle.gd_steps(x, y, np.zeros(3), total, 5, 0.1, 0.5, 1.0, 2.0, 4,
                                    LOGISTIC.mean, rng, lambda: np.zeros(3))
    assert done == 0 and theta.tolist() == [0.0, 0.0, 0.0] and total.tolist() == [0.0] * 3
    assert rng.bit_generator.state == before


def test_compiled_iterations_refuse_other_arguments() -> None:
    rng = np.random.default_rng(1)
    x, y = np.eye(3), np.zeros(3)
    def blanket() -> np.ndarray:
        return np.zeros(3)

    with pytest.raises(ValueError, match="total is not allowed"):
        _shuffle.gd_steps(x, y, np.zeros(3), np.zeros(2), 5, 0.1, 0.5, 1.0, 2.0, 4, None, rng,
                          blanket)
    with pytest.raises(ValueError, match="g, bound are not allowed"):
        _shuffle.gd_steps(x, y, np.zeros(3), np.zeros(3), 5, 0.1, 0.5, 1.0, 2.0, 0, None, rng,
                          blanket)
    with pytest.raises(TypeError, match="rng is not allowed"):
        _shuffle.gd_steps(x, y, np.zeros(3), np.zeros(3), 5, 0.1, 0.5, 1.0, 2.0, 4, None,
                          rng.bit_generator, blanket)
    with pytest.raises(ValueError, match="blanket is not allowed"):
        _shuffle.gd_steps(x, y, np.zeros(3), np.zeros(3), 5, 0.1, 0.5, 1.0, 2.0, 4, None, rng,
                          lambda: np.zeros(2))


def test_iterations_handed_over_partway_are_the_numpy_loops(monkeypatch) -> None:
    """The compiled call stopped after k iterations and the numpy loop making the rest: θ̂ and
    the generator's state are those of the numpy loop alone."""
    x, y = _data(np.random.default_rng(3), np.array([0.5, -1.0, 0.2]), 300)
    kwargs = {"S": 2.0, "epsilon": 4.0, "delta": 0.01, "lam_max": 5.0, "R": 1.0, "c_b": 1.0,
              "log_arg": "practical"}
    expected_rng = np.random.default_rng(9)
    expected = numpy_gd(monkeypatch, x, y, LOGISTIC, rng=expected_rng, **kwargs)
    assert expected.iterations > 20
    for k in (1, 7, expected.iterations - 1):
        def partway(X, y, theta, total, iters, *rest, k=k):  # noqa: ANN001, ANN202
            return compiled_steps(X, y, theta, total, k, *rest)

        with monkeypatch.context() as patch:
            patch.setattr(shuffle_gd_module, "compiled_steps", partway)
            rng = np.random.default_rng(9)
            out = shuffle_gd(x, y, LOGISTIC, rng=rng, **kwargs)
        assert out.theta.tobytes() == expected.theta.tobytes()
        assert rng.bit_generator.state == expected_rng.bit_generator.state
