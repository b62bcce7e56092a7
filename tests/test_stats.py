"""Statistics of the claims, outputs and report: against scipy and the textbook formulas."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sp

from dpbandits import stats

RNG_SEED = 20251201


@pytest.fixture(scope="module")
def rng() -> np.random.Generator:
    return np.random.default_rng(RNG_SEED)


def test_normal_quantiles():
    assert stats.Z95 == sp.norm.ppf(0.975)
    assert stats.Z95_ONE_SIDED == sp.norm.ppf(0.95)


def test_sd_and_standard_error(rng):
    x = rng.normal(3, 2, 9)
    assert stats.sample_sd(x) == pytest.approx(np.sqrt(np.sum((x - x.mean()) ** 2) / 8))
    assert stats.standard_error(x) == pytest.approx(stats.sample_sd(x) / 3)
    series = pd.Series(x)
    assert stats.standard_error(series) == series.std(ddof=1) / 3  # the Series' own std
    # equal values: exactly 0, where the float sd of 2312.1 repeated ten times is 4.8e-13
    assert np.full(10, 2312.1).std(ddof=1) > 0
    assert stats.standard_error(np.full(10, 2312.1)) == 0.0
    assert stats.sample_sd(x[:1]) == 0.0 and math.isnan(stats.standard_error(x[:1]))


def test_t_intervals(rng):
    x = rng.normal(0, 1, 7)
    half = stats.t_half_width(x)
    assert half == pytest.approx(sp.t.ppf(0.975, 6) * x.std(ddof=1) / math.sqrt(7))
    low, high = sp.t.interval(0.9, 6, loc=x.mean(), scale=sp.sem(x))
    assert stats.t_half_width(x, alpha=0.1) == pytest.approx((high - low) / 2)
    assert math.isnan(stats.t_half_width(x[:1]))
    assert stats.t_margin(2.0, 6) == pytest.approx(2.0 * sp.t.ppf(0.975, 6))


def test_differences_paired_and_welch(rng):
    x, y = rng.normal(1, 1, 8), rng.normal(0, 2, 5)
    est, se, df = stats.paired_difference(x - x[::-1])
    assert (est, df) == (pytest.approx(0.0, abs=1e-12), 7)
    est, se, df = stats.welch_difference(x, y)
    res = sp.ttest_ind(x, y, equal_var=False)
    assert est / se == pytest.approx(res.statistic)
    assert df == pytest.approx(res.df)


@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
def test_t_tests_give_scipy_stats_numbers_bit_for_bit(rng, alternative):
    for _ in range(200):
        n, m = rng.integers(2, 30, size=2)
        x = rng.normal(0, 1, n) * rng.uniform(0.01, 100)
        y = x + rng.normal(rng.normal(), rng.uniform(0.01, 2), n)
        z = rng.normal(0.2, 2, m)
        paired = sp.ttest_rel(x, y, alternative=alternative)
        welch = sp.ttest_ind(x, z, equal_var=False, alternative=alternative)
        assert stats.paired_t_test(x, y, alternative) == (paired.statistic, paired.pvalue)
        assert stats.welch_t_test(x, z, alternative) == (welch.statistic, welch.pvalue)


def test_t_tests_of_constant_samples_are_nan_or_infinite_as_in_scipy_stats():
    same, ones, zeros = np.ones(3), np.ones(3), np.zeros(4)
    assert all(np.isnan(stats.paired_t_test(same, ones)))
    assert all(np.isnan(stats.welch_t_test(ones, np.ones(4))))
    assert stats.welch_t_test(ones, zeros, "less") == (np.inf, 1.0)
    with pytest.raises(ValueError, match="alternative = 'bigger' is not allowed"):
        stats.paired_t_test(ones, same + 1, "bigger")


def test_slope_and_its_standard_error_are_scipy_linregress_numbers(rng):
    for _ in range(200):
        x = np.repeat(np.arange(1.0, 1 + rng.integers(2, 6)), rng.integers(1, 4))
        y = 2 * x + rng.normal(0, 1, len(x))
        fit = sp.linregress(x, y)
        assert stats._least_squares_slope(x, y) == (fit.slope, fit.stderr)
    with pytest.raises(ValueError, match="two distinct x values"):
        stats.slope_t_test(np.ones(4), np.arange(4.0), increasing=True)


@pytest.mark.parametrize("x, y", [
    (np.arange(5.0), np.zeros(5)),  # constant y: no correlation defined
    (np.arange(5.0) * 1e-160, np.array([1.0, 3, 2, 5, 4]) * 1e-160),  # ssxm·ssym underflows
    (np.array([1.0, 2, 3, 4]), np.array([2.0, 4, 6, 8])),  # an exact line
    (np.arange(6.0), np.array([1.0, np.nan, 2, 3, 4, 5])),
])
def test_slope_edge_cases_are_scipy_linregress_numbers(x, y):
    fit = sp.linregress(x, y)
    assert np.array_equal(stats._least_squares_slope(x, y), (fit.slope, fit.stderr),
                          equal_nan=True)


def test_t_tests_of_one_value_are_nan_as_in_scipy_stats():
    one, two = np.array([1.0]), np.array([1.0, 2.0])
    assert all(np.isnan(stats.paired_t_test(one, one + 1)))
    assert all(np.isnan(stats.welch_t_test(one, two)))


def test_variance_ratio_and_slope(rng):
    x, y = rng.normal(0, 3, 12), rng.normal(0, 1, 12)
    vx, vy, p = stats.variance_ratio_test(x, y)
    assert p == pytest.approx(sp.f.sf(vx / vy, 11, 11)) and p < 0.05
    assert stats.variance_ratio_test(x, np.ones(3))[2] == 0.0
    grid = np.repeat([1.0, 2.0, 3.0], 4)
    slope, t, p = stats.slope_t_test(grid, 2 * grid + rng.normal(0, 0.1, 12), increasing=True)
    assert slope == pytest.approx(2, rel=0.05) and t > 10 and p < 1e-6
    assert stats.slope_t_test(grid, 2 * grid, increasing=False)[2] == 1.0


def test_ratio_of_means_delta_method(rng):
    b = rng.normal(10, 1, 50)
    a = 2 * b + rng.normal(0, 0.1, 50)
    r, se = stats.ratio_of_means(a, b)
    assert r == pytest.approx(2, rel=0.01) and 0 < se < 0.01
    assert math.isnan(stats.ratio_of_means(a[:1], b[:1])[1])


def test_bootstraps_are_seeded_and_centred(rng):
    x, y = rng.normal(10, 1, 20), rng.normal(5, 1, 20)
    ratio, reps = stats.bootstrap_ratio(x, y, seed=3, paired=True, n_boot=500)
    again = stats.bootstrap_ratio(x, y, seed=3, paired=True, n_boot=500)[1]
    assert np.array_equal(reps, again) and reps.shape == (500,)
    assert np.quantile(reps, 0.025) < ratio < np.quantile(reps, 0.975)
    unpaired = stats.bootstrap_ratio(x, y[:7], seed=3, paired=False, n_boot=500)[1]
    assert unpaired.std() > reps.std()
    means = stats.bootstrap_means([x, y], seed=3, n_boot=200)
    assert means.shape == (200, 2) and means[:, 0].mean() == pytest.approx(x.mean(), rel=0.01)
