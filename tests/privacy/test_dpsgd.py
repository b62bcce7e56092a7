"""DP-SGD as the authors ran it and the strict noisy GD.

docs/glm.md, "DP-SGD and the RDP accountant" and "Strict fits".
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits.links import LINKS, get_link
from dpbandits.privacy import accountant
from dpbandits.privacy.dpsgd import (
    clipped_gradients,
    dpsgd_fit,
    noisy_gd_fit,
    project_ball,
    replace_one_epsilon,
    select_epochs,
    sgd_passes,
    starting_epochs,
    strict_sigma,
)
from dpbandits.privacy.exact_noise import ExactNoise

PROBIT = get_link("probit")


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DPBANDITS_CACHE", str(tmp_path))
    accountant.clear_memo()
    yield
    accountant.clear_memo()


def test_starting_epochs() -> None:
    assert [starting_epochs(e) for e in (0.05, 0.1, 0.2, 0.3, 0.9, 1.5, 2.0, 3.0)] == [
        15, 15, 25, 25, 50, 75, 75, 100]


def test_epoch_search_matches_the_logs() -> None:
    """n ≤ 2048 → E = 12, B = 5; n = 4371, b = 2048 → E = 38, B = 15."""
    epochs, burn, sigma = select_epochs(0.2222222, 7.407407e-4, 1082, 1082, 3)
    assert (epochs, burn) == (12, 5)
    assert sigma == pytest.approx(37.9400, rel=1e-3)
    epochs, burn, _ = select_epochs(0.2962963, 7.407407e-4, 4371, 2048, 3)
    assert (epochs, burn) == (38, 15)


def _data(rng: np.random.Generator, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    x = rng.normal(size=(n, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x, (rng.random(n) < 0.5).astype(float)


def test_clipping() -> None:
    rng = np.random.default_rng(0)
    x, y = _data(rng, 500, 4)
    g = clipped_gradients(rng.normal(size=4) * 5, 3 * x, y, PROBIT, 0.2)
    assert np.all(np.linalg.norm(g, axis=1) <= 0.2 * (1 + 1e-12))
    assert np.any(np.linalg.norm(g, axis=1) > 0.2 * (1 - 1e-12))  # some are clipped
    small = clipped_gradients(np.zeros(4), 0.1 * x, y, PROBIT, 0.2)
    assert np.allclose(small, (0.5 - y)[:, None] * 0.1 * x)  # below C: untouched


def test_dpsgd_noise_steps_and_averaging() -> None:
    """With X = 0 the iterates are θ₀ − Σ lr_k ξ_k, ξ_k ~ N(0, (σC/b)²I): each epoch shuffles,
    then draws its spe steps' noise; E·spe steps; the mean of the epoch-end iterates after
    burn-in. Replayed with a generator of the same seed."""
    n, d, eps0, delta0 = 3000, 3, 0.2962963, 7.407407e-4
    x, y = np.zeros((n, d)), np.ones(n)
    theta0 = np.array([0.3, -0.2, 0.1])
    fit = dpsgd_fit(theta0, x, y, eps0, delta0, PROBIT, np.random.default_rng(1), lam=0.0)
    spe = n // 2048
    assert fit.batch == 2048 and fit.steps == fit.epochs * spe
    assert fit.noise_std == fit.sigma * 0.2 / 2048
    ref, order = np.random.default_rng(1), np.arange(n)
    theta, iterates, k = theta0.copy(), [], 0
    for _ in range(fit.epochs):
        ref.shuffle(order)
        for xi in ref.normal(0.0, fit.sigma * 0.2 / 2048, size=(spe, d)):
            k += 1
            theta = theta - 10.0 / math.sqrt(k) * xi
        iterates.append(theta)
    assert np.allclose(fit.theta, np.mean(iterates[fit.burn_in:], axis=0), atol=1e-12)


def test_actual_replace_one_cost_exceeds_claim() -> None:
    x, y = _data(np.random.default_rng(4), 900, 3)
    fit = dpsgd_fit(np.zeros(3), x, y, 0.2222222, 7.407407e-4, PROBIT, np.random.default_rng(5))
    actual = replace_one_epsilon(fit)
    assert actual > 1.5 * fit.epsilon
    assert actual == pytest.approx(accountant.dpsgd_epsilon(
        fit.sigma / 2, fit.delta, fit.steps, fit.n, fit.batch, target_epsilon=fit.epsilon))


def numpy_noisy_gd(theta: np.ndarray, X: np.ndarray, y: np.ndarray, rho: float, link, rng,
                   radius: float, steps: int, burn_in: int, clip: float = 0.2,
                   lam: float = 1e-5, lr0: float = 10.0) -> np.ndarray:
    """Full-batch noisy projected GD written step by step in numpy (docs/glm.md, "Strict
    fits"): one count draw, then one gradient noise draw per step."""
    sigma = math.sqrt((steps + 1) / (2.0 * rho))
    denom = max(X.shape[0] + rng.normal(0.0, sigma), 1.0)
    theta = project_ball(np.array(theta, dtype=float), radius)
    kept = []
    for k in range(1, steps + 1):
        g = clipped_gradients(theta, X, y, link, clip).sum(axis=0)
        g = g + rng.normal(0.0, 2.0 * clip * sigma, size=X.shape[1])
        theta = project_ball(theta - (lr0 / math.sqrt(k)) * (g / denom + 2.0 * lam * theta),
                             radius)
        if k > burn_in:
            kept.append(theta)
    return np.mean(kept, axis=0)


def test_strict_fit_noise_and_projection() -> None:
    """σ = √((K+1)/(2ρ)); one count draw of std σ, then K draws of std 2Cσ (one call per step
    in the reference); ‖θ‖ ≤ S."""
    x, y = _data(np.random.default_rng(6), 300, 3)
    rho = 0.02
    fit = noisy_gd_fit(np.full(3, 5.0), x, y, rho, PROBIT, np.random.default_rng(7), radius=2.0)
    sigma = math.sqrt(13 / (2 * rho))
    assert fit.sigma == pytest.approx(sigma) == strict_sigma(rho)
    assert fit.noise_std == pytest.approx(2 * 0.2 * sigma)
    expected = numpy_noisy_gd(np.full(3, 5.0), x, y, rho, PROBIT, np.random.default_rng(7),
                              2.0, 12, 5)
    np.testing.assert_allclose(fit.theta, expected, rtol=1e-10, atol=1e-12)
    assert np.linalg.norm(fit.theta) <= 2.0 + 1e-12
    for seed in range(20):  # huge noise: every iterate is projected
        out = noisy_gd_fit(np.zeros(3), x, y, 1e-6, PROBIT, np.random.default_rng(seed),
                           radius=1.5)
        assert np.linalg.norm(out.theta) <= 1.5 + 1e-12
    empty = noisy_gd_fit(np.zeros(3), x[:0], y[:0], rho, PROBIT, np.random.default_rng(7),
                         radius=2.0)
    assert empty.n == 0 and np.isfinite(empty.theta).all() and empty.theta.any()


def test_strict_fit_with_exact_noise_snaps_the_sums_and_draws_in_order() -> None:
    """Exact noise: the count is snapped and gets discrete noise first, then each step's
    gradient sum is snapped to the grid of its σ and gets d discrete draws (with X = 0 the
    sums are 0, so θ moves by the noise alone): replayed draw by draw from the same seed."""
    d, rho, n = 3, 0.05, 40
    x, y = np.zeros((n, d)), np.zeros(n)
    fit = noisy_gd_fit(np.zeros(d), x, y, rho, PROBIT, np.random.default_rng(0), radius=1e9,
                       noise=ExactNoise(np.random.default_rng(8)), lam=0.0)
    ref = ExactNoise(np.random.default_rng(8))
    count_sd = ref.calibrate_gaussian(1.0, rho / 13, 1)[0]
    grad_sd = ref.calibrate_gaussian(0.4, rho / 13, d)[0]
    denom = max(float(ref.snap(float(n), count_sd)) + float(ref.gaussian(count_sd)), 1.0)
    theta, kept = np.zeros(d), []
    for k in range(1, 13):
        g = ref.snap(np.zeros(d), grad_sd) + ref.gaussian(grad_sd, d)
        theta = theta - (10.0 / math.sqrt(k)) * (g / denom)
        if k > 5:
            kept.append(theta)
    assert fit.noise_std == grad_sd and fit.sigma == grad_sd / 0.4
    np.testing.assert_allclose(fit.theta, np.mean(kept, axis=0), rtol=1e-12)


def test_project_ball() -> None:
    inside = np.array([0.3, -0.4])
    np.testing.assert_array_equal(project_ball(inside, 0.5), inside)
    np.testing.assert_allclose(project_ball(np.array([3.0, 4.0]), 2.0), [1.2, 1.6])


def numpy_passes(theta: np.ndarray, X: np.ndarray, y: np.ndarray, link, rng, per_epoch: int,
                 batch: int, epochs: int, burn_in: int, **kwargs: float) -> np.ndarray:
    """The passes of `sgd_passes` written step by step in numpy, one noise draw per step."""
    clip, lam, lr0, noise_std = (kwargs[key] for key in ("clip", "lam", "lr0", "noise_std"))
    order, total, kept, k = np.arange(X.shape[0]), np.zeros(X.shape[1]), 0, 0
    for e in range(epochs):
        rng.shuffle(order)
        for start in range(0, per_epoch * batch, batch):
            k += 1
            idx = order[start:start + batch]
            g = clipped_gradients(theta, X[idx], y[idx], link, clip).mean(axis=0)
            g += 2.0 * lam * theta
            theta = theta - (lr0 / math.sqrt(k)) * (g + rng.normal(0.0, noise_std, size=X.shape[1]))
        if e >= burn_in:
            total += theta
            kept += 1
    return total / kept if kept else theta


def _passes_case(rng: np.random.Generator, family: str) -> tuple[tuple, dict[str, float]]:
    """Rows, a start point and minibatches as Private-GLM's fits make them: full minibatches
    (drop-last) or ab8fd16's with a short last one; gradients below and above the clip."""
    n, d = int(rng.integers(2, 2600)), int(rng.integers(1, 7))
    x = rng.normal(size=(n, d)) * rng.uniform(0.05, 2.0)
    y = (rng.random(n) < 0.5).astype(float) if LINKS[family].binary else rng.normal(size=n)
    batch = min(n, int(rng.integers(1, 2100)))
    per_epoch = max(1, n // batch) if rng.random() < 0.5 else -(-n // batch)
    args = (rng.normal(size=d), x, y, LINKS[family], per_epoch, batch, int(rng.integers(1, 5)),
            int(rng.integers(0, 3)))
    return args, {"clip": 0.2, "lam": 1e-5, "lr0": float(rng.choice([0.5, 10.0])),
                  "noise_std": float(rng.choice([0.0, 1e-3, 1.0]))}


@pytest.mark.parametrize("family", ["logistic", "probit", "linear"])
def test_passes_are_the_numpy_steps(family: str) -> None:
    """θ̄ against one numpy step and one noise draw per step (to rounding), and the generator
    left in the same state; with noise, twice the noise gives another θ̄ (negative control)."""
    rng = np.random.default_rng(30)
    for case in range(16):
        (theta0, x, y, link, *rest), kwargs = _passes_case(rng, family)
        mine, numpys = np.random.default_rng(case), np.random.default_rng(case)
        out = sgd_passes(theta0, x, y, link.kind, mine, *rest, *kwargs.values())
        expected = numpy_passes(theta0, x, y, link, numpys, *rest, **kwargs)
        np.testing.assert_allclose(out, expected, rtol=1e-9, atol=1e-12)
        assert mine.bit_generator.state == numpys.bit_generator.state
        if kwargs["noise_std"]:  # the noise rows reach θ̄ (negative control)
            louder = kwargs | {"noise_std": 2.0 * kwargs["noise_std"]}
            assert not np.allclose(sgd_passes(theta0, x, y, link.kind, np.random.default_rng(case),
                                              *rest, *louder.values()), out)
