"""Laplace calibration and exact noise sums (docs/linear.md, "Simulation paths")."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpbandits.errors import ConfigError
from dpbandits.privacy.laplace import clip_rewards, laplace_noise, laplace_scale, laplace_sum

DRAWS = 100_000


def test_scale_is_sensitivity_over_epsilon() -> None:
    assert laplace_scale(1.0, 0.5) == 2.0
    assert laplace_scale(2.0, 4.0) == 0.5


@pytest.mark.parametrize("epsilon", [0.0, -1.0, float("inf"), float("nan")])
def test_bad_epsilon_is_one_line_config_error(epsilon: float) -> None:
    with pytest.raises(ConfigError) as err:
        laplace_scale(1.0, epsilon)
    assert "epsilon" in str(err.value) and "\n" not in str(err.value)


def test_bad_sensitivity() -> None:
    with pytest.raises(ConfigError):
        laplace_scale(0.0, 1.0)


def test_noise_variance_matches_calibration() -> None:
    """Var Lap(Δ/ε) = 2(Δ/ε)²; tolerance 5 standard errors of the sample variance."""
    b = laplace_scale(1.0, 0.7)
    z = laplace_noise(np.random.default_rng(1), b, DRAWS)
    var = 2 * b**2
    se = np.sqrt((24 * b**4 - var**2) / DRAWS)  # Var of z² with E z⁴ = 24 b⁴
    assert abs(np.mean(z**2) - var) < 5 * se
    assert abs(z.mean()) < 5 * np.sqrt(var / DRAWS)
    assert stats.kstest(z, stats.laplace(scale=b).cdf).pvalue > 0.01


def test_gamma_difference_sum_matches_explicit_sum() -> None:
    """Σ of n Laplace(b): variance 2nb² and the same law as an explicit sum (KS, n = 50)."""
    n, b = 50, 1.3
    fast = laplace_sum(np.random.default_rng(2), np.full(DRAWS, n), b)
    explicit = np.random.default_rng(3).laplace(0.0, b, (DRAWS, n)).sum(axis=1)
    var = 2 * n * b**2
    kurt_excess = 3.0 / n  # Laplace excess kurtosis 3, divided by n for a sum
    se = var * np.sqrt((2 + kurt_excess) / DRAWS)
    assert abs(np.mean(fast**2) - var) < 5 * se
    assert stats.ks_2samp(fast, explicit).pvalue > 0.01


def test_sum_of_zero_counts_is_zero() -> None:
    out = laplace_sum(np.random.default_rng(0), np.array([0, 3, 0]), 1.0)
    assert out[0] == 0.0 and out[2] == 0.0 and out[1] != 0.0


def test_clip() -> None:
    np.testing.assert_array_equal(clip_rewards(np.array([-3.0, 0.2, 5.0]), 1.0), [-1.0, 0.2, 1.0])
