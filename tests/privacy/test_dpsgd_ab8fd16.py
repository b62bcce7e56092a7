"""DP-SGD of the authors' initial commit ab8fd16 (docs/glm.md, "Code state ab8fd16")."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits.errors import ConfigError
from dpbandits.links import get_link
from dpbandits.privacy import dpsgd_ab8fd16 as ab
from dpbandits.privacy.accountant import epsilon_from_rdp, rdp_orders
from dpbandits.privacy.dpsgd import select_epochs

DELTA0 = 0.02 / 6  # δ/3 split over c₂ = 2 fits: the Figure 1 θ_τ fits of ab8fd16

# σ printed by ab8fd16's own runs of Figure 1 (its saved notebook outputs, "DP-SGD: σ = …"):
# (ε₀, steps, q) → σ. q < 1 are fits with n = 2049 (2 steps per epoch), 4102 and 6765.
LOGGED_SIGMAS = [
    (4 / 3, 50, 1.0, 18.9039),
    (2 / 3, 50, 1.0, 36.8505),
    (1 / 3, 50, 1.0, 72.6820),
    (2 / 3, 100, 0.9995119570522206, 52.0890),
    (4 / 3, 100, 0.9995119570522206, 26.7211),
    (1 / 3, 100, 0.9995119570522206, 102.7378),
    (2 / 3, 100, 0.9951409135082604, 51.8612),
    (1 / 3, 150, 0.4992686494392979, 62.8524),
    (1 / 3, 200, 0.30273466371027347, 44.0067),
]


@pytest.mark.parametrize("eps0, steps, q, sigma", LOGGED_SIGMAS)
def test_calibration_reproduces_the_logged_sigmas(eps0: float, steps: int, q: float,
                                                  sigma: float) -> None:
    assert round(ab.noise_multiplier(eps0, DELTA0, steps, q), 4) == sigma


def test_orders_and_the_q_squared_bound() -> None:
    assert ab.orders(0.3).tolist() == list(range(2, 64))
    small = ab.orders(0.2)
    assert small[0] == 2 and small[15] == 62 and small[16] == 70 and small[-1] == 508
    sigma = ab.noise_multiplier(2 / 3, DELTA0, 100, 0.5)
    rdp = [100 * a * 0.25 / (2 * sigma**2) - math.log(DELTA0) / (a - 1) for a in range(2, 64)]
    assert min(rdp) == pytest.approx(2 / 3, abs=1e-6)


def _data(n: int, d: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    return X, (rng.uniform(size=n) < 0.5).astype(float)


def test_fixed_fifty_epochs_where_the_corrected_code_searches() -> None:
    """n = 513 at ε₀ = 4/3 (Figure 1(b), ε = 8, first switch): ab8fd16 runs 50 full-batch
    epochs at σ = 18.9039 (noise 0.007370 on the mean, as logged); d9c93e1 picks another E."""
    X, y = _data(513)
    fit = ab.dpsgd_fit(np.zeros(5), X, y, 4 / 3, DELTA0, get_link("probit"),
                       np.random.default_rng(1))
    assert (fit.epochs, fit.burn_in, fit.steps, fit.batch) == (50, 10, 50, 513)
    assert fit.sigma == pytest.approx(18.9039, abs=5e-5)
    assert fit.noise_std == pytest.approx(0.007369941280768137, rel=1e-5)
    assert select_epochs(4 / 3, DELTA0, 513, 513, 5)[0] != 50


def test_last_batch_is_partial_and_keeps_the_full_batch_noise() -> None:
    """n = 2049: two steps per epoch (2048 and 1 records), both with std σC/2048."""
    X, y = _data(2049)
    fit = ab.dpsgd_fit(np.zeros(5), X, y, 2 / 3, DELTA0, get_link("probit"),
                       np.random.default_rng(2))
    assert (fit.batch, fit.steps, ab.smallest_batch(fit)) == (2048, 100, 1)
    assert fit.sigma == pytest.approx(52.0890, abs=5e-5)
    assert fit.noise_std == pytest.approx(fit.sigma * 0.2 / 2048)


def test_noise_adaptation_cuts_epochs_and_step_size() -> None:
    """n = 20, ε₀ = 1/3: std 0.727 > 0.3, so epochs fall 50 → 45 → 40 → 36 → 32 → 28 → 25 → 22
    (× 0.9 while std > 0.5) → 20 → 19 (× 0.95), where 19 steps < 20 stops the rule; burn-in
    10 → 1; lr₀ 10 → 1."""
    sigma50 = ab.noise_multiplier(1 / 3, DELTA0, 50, 1.0)
    assert sigma50 * 0.2 / 20 == pytest.approx(0.72682, rel=1e-5)
    epochs, burn_in, lr0, std = ab.adapt(sigma50 * 0.2 / 20, 50, 10, 10.0, 1 / 3, DELTA0, 20,
                                         20, 0.2)
    assert (epochs, burn_in, lr0) == (19, 1, 1.0)
    assert std == pytest.approx(ab.noise_multiplier(1 / 3, DELTA0, 19, 1.0) * 0.2 / 20)
    assert ab.adapt(0.3, 50, 10, 10.0, 1 / 3, DELTA0, 20, 20, 0.2) == (50, 10, 10.0, 0.3)


def test_fit_draws_only_from_its_generator_and_averages_after_burn_in() -> None:
    """Same generator state, same fit; with zero data gradients θ only moves by the noise."""
    X, y = _data(40)
    link = get_link("logistic")
    a = ab.dpsgd_fit(np.zeros(5), X, y, 4 / 3, DELTA0, link, np.random.default_rng(5))
    b = ab.dpsgd_fit(np.zeros(5), X, y, 4 / 3, DELTA0, link, np.random.default_rng(5))
    assert np.array_equal(a.theta, b.theta)
    zero = ab.dpsgd_fit(np.zeros(5), np.zeros((40, 5)), np.zeros(40), 4 / 3, DELTA0, link,
                        np.random.default_rng(6), lam=0.0)
    ref = np.random.default_rng(6)
    order = np.arange(40)
    theta, total, kept = np.zeros(5), np.zeros(5), 0
    for e in range(zero.epochs):
        ref.shuffle(order)  # one full-batch step per epoch (n = 40), lr₀ = 10 (no adaptation)
        theta = theta - (10.0 / math.sqrt(e + 1)) * ref.normal(0.0, zero.noise_std, 5)
        if e >= zero.burn_in:
            total, kept = total + theta, kept + 1
    assert zero.epochs == 50
    assert np.allclose(zero.theta, total / kept, rtol=1e-12, atol=1e-15)


def test_replace_one_cost_is_the_worst_step_without_amplification() -> None:
    """q = 1: E Gaussian steps at multiplier σ/2 (claimed at σ, sensitivity C); n = 2049: the
    record in the one-sample batch sees multiplier σ·1/(2·2048)."""
    X, y = _data(513)
    fit = ab.dpsgd_fit(np.zeros(5), X, y, 4 / 3, DELTA0, get_link("probit"),
                       np.random.default_rng(1))
    orders = np.asarray(rdp_orders(4 / 3))
    expected = epsilon_from_rdp(orders, 50 * orders / (2 * (fit.sigma / 2) ** 2), DELTA0)
    assert ab.replace_one_epsilon(fit) == pytest.approx(expected, rel=1e-12)
    assert 4 / 3 < ab.replace_one_epsilon(fit) < 3.0
    X, y = _data(2049)
    big = ab.dpsgd_fit(np.zeros(5), X, y, 2 / 3, DELTA0, get_link("probit"),
                       np.random.default_rng(2))
    sigma_eff = big.sigma / (2 * 2048)
    orders = np.asarray(rdp_orders(2 / 3))
    expected = epsilon_from_rdp(orders, 50 * orders / (2 * sigma_eff**2), DELTA0)
    assert ab.replace_one_epsilon(big) == pytest.approx(expected, rel=1e-12)
    assert ab.replace_one_epsilon(big) > 1e4


def test_unreachable_epsilon_is_one_error_line() -> None:
    """ε₀ below ln(1/δ₀)/507 cannot be met by any σ ≤ 4·10⁷ (ab8fd16 raises as well)."""
    with pytest.raises(ConfigError, match="not attainable by the ab8fd16 calibration"):
        ab.noise_multiplier(0.005, 1e-5, 50, 1.0)
