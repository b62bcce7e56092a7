"""Clopper–Pearson bounds and the ε lower bound of a threshold distinguisher."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom, norm

from dpbandits.audit.bounds import (
    clopper_pearson,
    cp_lower,
    cp_upper,
    epsilon_from_rates,
    epsilon_lower_bound,
    linear_statistic,
)
from dpbandits.errors import ConfigError


def test_clopper_pearson_closed_forms_at_the_ends() -> None:
    # k = 0: upper = 1 − (α/2)^{1/n}; k = n: lower = (α/2)^{1/n}.
    lo, hi = clopper_pearson(0, 10, 0.95)
    assert lo == 0.0
    assert hi == pytest.approx(1 - 0.025 ** (1 / 10), rel=1e-10)
    lo, hi = clopper_pearson(10, 10, 0.95)
    assert lo == pytest.approx(0.025 ** (1 / 10), rel=1e-10)
    assert hi == 1.0
    assert float(cp_upper(0, 50, 0.9)) == pytest.approx(1 - 0.1 ** (1 / 50), rel=1e-10)


@pytest.mark.parametrize("n", [20, 137])
def test_one_sided_bounds_cover_exactly(n: int) -> None:
    """Exact coverage over a grid of p: P(p ≤ CP_upper(K)) ≥ c and P(p ≥ CP_lower(K)) ≥ c."""
    k = np.arange(n + 1)
    upper = cp_upper(k, n, 0.95)
    lower = cp_lower(k, n, 0.95)
    for p in np.linspace(0.001, 0.999, 157):
        pmf = binom.pmf(k, n, p)
        assert pmf[upper >= p].sum() >= 0.95 - 1e-12
        assert pmf[lower <= p].sum() >= 0.95 - 1e-12


def test_epsilon_from_rates_recovers_laplace_and_handles_edges() -> None:
    eps = 1.3
    # S = {x > Δ} for Lap(0, Δ/ε) vs Lap(Δ, Δ/ε): FPR = e^{−ε}/2, FNR = 1/2.
    assert float(epsilon_from_rates(0.5 * math.exp(-eps), 0.5, 0.0)) == pytest.approx(eps)
    # Symmetric in the two error types, and δ lowers the bound.
    assert float(epsilon_from_rates(0.5, 0.5 * math.exp(-eps), 0.0)) == pytest.approx(eps)
    assert float(epsilon_from_rates(0.1, 0.5, 0.05)) == pytest.approx(math.log(0.45 / 0.1))
    # A useless test (FPR + FNR = 1) gives ε = 0; a perfect one gives ∞.
    assert float(epsilon_from_rates(0.3, 0.7, 0.0)) == pytest.approx(0.0, abs=1e-12)
    assert math.isinf(float(epsilon_from_rates(0.0, 0.0, 0.0)))
    # Numerators that δ makes non-positive give −∞ (no information), not NaN.
    assert float(epsilon_from_rates(0.99, 0.99, 0.5)) == -math.inf


def test_lower_bound_holds_on_identical_inputs_at_the_stated_level() -> None:
    """D0 = D1: every test has ε = 0, so ε_lb > 0 is a coverage failure (≤ 5% expected)."""
    rng = np.random.default_rng(20240601)
    trials = 200
    failures = sum(
        epsilon_lower_bound(rng.normal(size=500), rng.normal(size=500), 1e-5).epsilon_lb > 0
        for _ in range(trials)
    )
    # 5% level; allow 4 standard errors of a Binomial(200, 0.05) count.
    assert failures <= 0.05 * trials + 4 * math.sqrt(trials * 0.05 * 0.95)


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """Exact ε(δ) of N(0,1) vs N(μ,1) (Balle–Wang 2018, analytic Gaussian)."""
    from scipy.optimize import brentq

    def excess(eps: float) -> float:
        return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2) - delta

    return brentq(excess, 0.0, 50.0)


def test_lower_bound_stays_below_the_true_epsilon_and_is_informative() -> None:
    mu, delta = 1.0, 1e-3
    truth = _gaussian_epsilon(mu, delta)
    rng = np.random.default_rng(7)
    bounds = [
        epsilon_lower_bound(rng.normal(0, 1, 100_000), rng.normal(mu, 1, 100_000), delta)
        for _ in range(20)
    ]
    lbs = np.array([b.epsilon_lb for b in bounds])
    assert np.all(lbs <= truth)
    assert np.median(lbs) > 0.5 * truth
    for b in bounds:
        assert b.epsilon_lb <= b.epsilon_hat <= b.epsilon_ub


def test_threshold_is_chosen_on_a_separate_half() -> None:
    """Selection halves perfectly separated, held-out halves identical: no evidence survives."""
    rng = np.random.default_rng(3)
    n = 5000
    same = rng.normal(size=n)
    s0 = np.concatenate([rng.normal(-10, 1, n), same])
    s1 = np.concatenate([rng.normal(10, 1, n), same])
    bound = epsilon_lower_bound(s0, s1, 0.0)
    assert bound.epsilon_lb == 0.0
    assert bound.epsilon_hat < 0.2


def test_detects_a_shift_in_either_direction() -> None:
    rng = np.random.default_rng(11)
    a = rng.laplace(0, 1, 200_000)
    b = rng.laplace(0, 1, 200_000) - 1.0
    bound = epsilon_lower_bound(a, b, 0.0)
    assert bound.direction == -1
    assert 0.9 < bound.epsilon_lb <= 1.0


def test_linear_statistic_uses_only_the_selection_halves() -> None:
    rng = np.random.default_rng(5)
    f0 = rng.normal(size=(400, 3))
    f1 = rng.normal(size=(400, 3)) + np.array([0.5, 0.0, -0.5])
    s0, s1 = linear_statistic(f0, f1)
    g0, g1 = f0.copy(), f1.copy()
    g0[200:] = rng.normal(size=(200, 3)) * 100
    t0, t1 = linear_statistic(g0, g1)
    np.testing.assert_allclose(s0[:200], t0[:200])
    np.testing.assert_allclose(s1, t1)
    # Constant features (no variation at all) give finite scores.
    c0, c1 = linear_statistic(np.ones((10, 2)), np.ones((10, 2)) * 2)
    assert np.all(np.isfinite(c0)) and np.all(np.isfinite(c1))


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"scores0": np.zeros(3), "scores1": np.zeros(10), "delta": 0.0}, ConfigError),
        ({"scores0": np.zeros(10), "scores1": np.zeros(10), "delta": 1.0}, ConfigError),
        ({"scores0": np.zeros(10), "scores1": np.zeros(10), "delta": 0.0, "confidence": 1.0},
         ConfigError),
        ({"scores0": np.full(10, np.nan), "scores1": np.zeros(10), "delta": 0.0}, ValueError),
    ],
)
def test_rejects_bad_inputs(kwargs: dict, error: type[Exception]) -> None:
    with pytest.raises(error):
        epsilon_lower_bound(**kwargs)
