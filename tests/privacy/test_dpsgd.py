"""DP-SGD as the authors ran it and the strict noisy GD.

docs/glm.md, "DP-SGD and the RDP accountant" and "Strict fits".
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits.links import get_link
from dpbandits.privacy import accountant
from dpbandits.privacy.dpsgd import (
    clipped_gradients,
    dpsgd_fit,
    noisy_gd_fit,
    replace_one_epsilon,
    select_epochs,
    starting_epochs,
    strict_sigma,
)

PROBIT = get_link("probit")


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DPBANDITS_CACHE", str(tmp_path))
    accountant.clear_memo()
    yield
    accountant.clear_memo()


class RecordingRng:
    """Duck-typed Generator that records every normal draw (scale and values)."""

    def __init__(self, seed: int) -> None:
        self.g = np.random.default_rng(seed)
        self.normals: list[tuple[float, np.ndarray]] = []

    def shuffle(self, a: np.ndarray) -> None:
        self.g.shuffle(a)

    def normal(self, loc: float, scale: float, size=None):
        out = self.g.normal(loc, scale, size)
        self.normals.append((scale, np.atleast_1d(out)))
        return out


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
    small = clipped_gradients(np.zeros(4), 0.1 * x, y, PROBIT, 0.2)
    assert np.allclose(small, (0.5 - y)[:, None] * 0.1 * x)  # below C: untouched


def test_dpsgd_noise_steps_and_averaging() -> None:
    """With X = 0 the iterates are θ₀ − Σ lr_k ξ_k: check σC/b, E·spe steps, burn-in mean."""
    n, d, eps0, delta0 = 3000, 3, 0.2962963, 7.407407e-4
    x, y = np.zeros((n, d)), np.ones(n)
    theta0 = np.array([0.3, -0.2, 0.1])
    rng = RecordingRng(1)
    fit = dpsgd_fit(theta0, x, y, eps0, delta0, PROBIT, rng, lam=0.0)
    assert fit.batch == 2048 and fit.steps == fit.epochs * (n // 2048)
    assert len(rng.normals) == fit.steps
    assert all(scale == pytest.approx(fit.sigma * 0.2 / 2048) for scale, _ in rng.normals)
    theta, iterates, k = theta0.copy(), [], 0
    spe = n // 2048
    for _ in range(fit.epochs):
        for _ in range(spe):
            theta = theta - 10.0 / math.sqrt(k + 1) * rng.normals[k][1]
            k += 1
        iterates.append(theta)
    assert np.allclose(fit.theta, np.mean(iterates[fit.burn_in:], axis=0), atol=1e-12)


def test_dpsgd_injected_noise_std() -> None:
    rng = RecordingRng(2)
    x, y = _data(np.random.default_rng(3), 400, 3)
    draws = []
    for _ in range(40):
        rng.normals.clear()
        fit = dpsgd_fit(np.zeros(3), x, y, 0.2222222, 7.407407e-4, PROBIT, rng)
        draws.extend(v for _, v in rng.normals)
    draws = np.concatenate(draws)
    target = fit.sigma * 0.2 / 400
    se = math.sqrt(2.0 / (draws.size - 1))
    assert abs(draws.std(ddof=1) / target - 1) < 5 * se


def test_actual_replace_one_cost_exceeds_claim() -> None:
    x, y = _data(np.random.default_rng(4), 900, 3)
    fit = dpsgd_fit(np.zeros(3), x, y, 0.2222222, 7.407407e-4, PROBIT, np.random.default_rng(5))
    actual = replace_one_epsilon(fit)
    assert actual > 1.5 * fit.epsilon
    assert actual == pytest.approx(accountant.dpsgd_epsilon(
        fit.sigma / 2, fit.delta, fit.steps, fit.n, fit.batch, target_epsilon=fit.epsilon))


def test_strict_fit_noise_and_projection() -> None:
    """σ = √((K+1)/(2ρ)); one count draw of std σ, then K draws of std 2Cσ; ‖θ‖ ≤ S."""
    x, y = _data(np.random.default_rng(6), 300, 3)
    rng = RecordingRng(7)
    rho = 0.02
    fit = noisy_gd_fit(np.full(3, 5.0), x, y, rho, PROBIT, rng, radius=2.0)
    sigma = math.sqrt(13 / (2 * rho))
    assert fit.sigma == pytest.approx(sigma) == strict_sigma(rho)
    scales = [s for s, _ in rng.normals]
    assert scales[0] == pytest.approx(sigma)
    assert scales[1:] == pytest.approx([2 * 0.2 * sigma] * 12)
    assert np.linalg.norm(fit.theta) <= 2.0 + 1e-12
    for seed in range(20):  # huge noise: every iterate is projected
        out = noisy_gd_fit(np.zeros(3), x, y, 1e-6, PROBIT, np.random.default_rng(seed),
                           radius=1.5)
        assert np.linalg.norm(out.theta) <= 1.5 + 1e-12
