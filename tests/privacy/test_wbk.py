"""The WBK 2019 Thm 27 bound: forward differences against dp-accounting, log A_α against the
theorem's sum written out term by term."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as rdp_ref
from wbk_truth import true_log_diffs  # noqa: E402  (tests/privacy on sys.path)

from dpbandits.errors import ConfigError
from dpbandits.privacy import wbk

RTOL = 1e-10
# |ours − truth| of a log-difference: the triangle's value is kept where it is within
# wbk.AGREE = 1e-10 of the positive series, whose own error was measured ≤ 5.7e-13 (up to
# 4200 terms, n ≤ 256, σ from 0.05 to 1e4; bounded by 1e-12 in
# test_the_series_is_within_its_stated_error); plus 4 ulps of the log value itself (at
# σ = 0.05, n = 256 the logs reach 1.3e7, whose ulp is 1.9e-9: float64 cannot do better there).
SERIES_ATOL = 1e-12
TRUTH_ATOL = wbk.AGREE + SERIES_ATOL
ULPS = 4 * 2.0**-52


def reference_diffs(sigma: float, n: int) -> np.ndarray:
    """dp-accounting's log|Δ^{i+1}| at 0 of e^{cgf}, cgf(x) = x(x + 1)/(2σ²)."""
    deltas, _ = rdp_ref._get_forward_diffs(lambda x: x * 1.0 * (x + 1) / (2.0 * sigma**2), n)
    return deltas


def truth_gap_ok(ours: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Per entry: −∞ exactly where the truth is 0, else within TRUTH_ATOL + 4 ulps of it."""
    finite = np.isfinite(truth)
    gap = np.where(finite, np.abs(ours - np.where(finite, truth, 0.0)), 0.0)
    return np.where(finite, np.isfinite(ours) & (gap <= TRUTH_ATOL + ULPS * np.abs(truth)),
                    ours == truth)


@pytest.mark.parametrize("sigma, n", [(0.05, 64), (0.05, 256), (0.7, 64), (1.1, 256), (3.0, 128),
                                      (4.5, 256), (8.0, 256), (19.82702778847933, 192),
                                      (70.0, 64), (69.97, 256), (400.0, 32), (1000.0, 256)])
def test_forward_differences_are_the_exact_ones(sigma: float, n: int) -> None:
    """Every log|Δ| within TRUTH_ATOL + 4 ulps of the exact value (mpmath, `wbk_truth`),
    including the high orders at large σ where the difference triangle alone (ours and
    dp-accounting's) cancels to noise: there the truth is e.g. e^{-170} at σ = 70, Δ^65, while
    the triangle gives e^{+5}."""
    assert truth_gap_ok(wbk.log_forward_diffs(sigma, n), true_log_diffs(sigma, n)).all()


@pytest.mark.parametrize("sigma, n", [(0.05, 64), (0.7, 64), (1.1, 256), (3.0, 128)])
def test_forward_differences_are_dp_accountings_where_it_is_exact(sigma: float, n: int) -> None:
    """Where dp-accounting's triangle is itself within 1e-10 of the truth (small σ: measured
    ≤ 6e-11 here, no cancellation) ours equals it to 1e-10 + 4 ulps."""
    ref, truth = reference_diffs(sigma, n), true_log_diffs(sigma, n)
    assert truth_gap_ok(ref, truth).all()  # the reference is accurate at these points
    finite = np.isfinite(ref)
    ours = wbk.log_forward_diffs(sigma, n)
    assert np.array_equal(ours[~finite], ref[~finite])
    assert np.all(np.abs(ours[finite] - ref[finite]) <= RTOL + ULPS * np.abs(ref[finite]))


def test_the_triangle_alone_is_not_the_truth_at_large_sigma() -> None:
    """Why the series is needed: dp-accounting's triangle misses the exact Δ^{i+1} at σ = 70
    by more than e^{100} at high orders, and ours without the series (the triangle only)
    fails the same check."""
    truth = true_log_diffs(70.0, 64)
    assert np.max(np.abs(reference_diffs(70.0, 64)[1:] - truth[1:])) > 100.0
    assert not truth_gap_ok(wbk.forward_diffs_kernel(2.0 * 70.0**2, 64), truth).all()


@pytest.mark.parametrize("sigma, n", [(1.7, 32), (70.0, 64)])
def test_the_comparison_sees_a_small_change_of_sigma(sigma: float, n: int) -> None:
    """The control: differences at σ(1 + 1e-6) are not the exact ones at σ, nor (where it is
    accurate) dp-accounting's."""
    moved = wbk.log_forward_diffs(sigma * (1 + 1e-6), n)
    assert not truth_gap_ok(moved, true_log_diffs(sigma, n)).all()
    if sigma < 2:
        ref = reference_diffs(sigma, n)[1:]
        assert not np.all(np.abs(moved[1:] - ref) <= RTOL * np.abs(ref))


def test_forward_differences_of_every_length() -> None:
    """n + 2 values for every n ≥ 0; the first is log|e^{cgf(0)} − 1| = log(1 − 1) = −∞."""
    for n in (0, 1, 2, 5):
        deltas = wbk.log_forward_diffs(2.0, n)
        assert deltas.shape == (n + 2,)
        assert deltas[0] == -math.inf
        assert truth_gap_ok(deltas, true_log_diffs(2.0, n)).all()


@pytest.mark.parametrize("n", [-1, 2.5])
def test_bad_lengths_are_refused(n: float) -> None:
    with pytest.raises(ValueError, match="n = .* is not allowed"):
        wbk.log_forward_diffs(2.0, n)


def log_a_reference(q: float, sigma: float, alpha: int, deltas: np.ndarray,
                    max_terms: int | None = None) -> float:
    """log A_α of WBK Thm 27 for one integer order, term by term as dp-accounting's
    `_compute_rdp_sample_wor_gaussian_int` writes it (exact up to 256, Stirling beyond)."""
    top = alpha if max_terms is None else min(alpha, max_terms)
    f2 = 1.0 / sigma**2
    s = [2 * math.log(q) + rdp_ref._log_comb(alpha, 2)
         + min(math.log(4) + f2 + math.log1p(-math.exp(-f2)), f2 + math.log(2))]
    for i in range(3, top + 1):
        cgf = (i - 1) * i / (2.0 * sigma**2)
        if alpha <= wbk.EXACT_MAX_ORDER:
            lo, hi = deltas[2 * (i // 2) - 1], deltas[2 * ((i + 1) // 2) - 1]
            bound = min(math.log(4) + 0.5 * (lo + hi), math.log(2) + cgf)
        else:
            bound = math.log(2) + cgf
        s.append(bound + i * math.log(q) + rdp_ref._log_comb(alpha, i))
    log_a = 0.0
    for term in s:
        log_a = rdp_ref._log_add(log_a, term)
    return log_a


GROUPS = [np.array([2, 3, 8, 64]), np.arange(2, 65), np.array([96, 128, 192, 256]),
          np.array([384, 512, 1024]), np.array([2, 96, 256, 512])]


def test_log_a_is_the_theorems_sum() -> None:
    """Random q, σ, orders (exact, Stirling and both together) and term cut-offs: every order
    to 1e-12 of the sum written out term by term with the same forward differences."""
    rng = np.random.default_rng(8)
    for case in range(60):
        q, sigma = rng.uniform(0.001, 0.999), math.exp(rng.uniform(math.log(0.3), math.log(300)))
        alphas = GROUPS[case % len(GROUPS)]
        max_terms = int(rng.choice([64, 100])) if case % 3 == 0 else None
        deltas = wbk.log_forward_diffs(sigma, 256)
        got = wbk.log_a_ints(q, sigma, alphas, deltas, max_terms=max_terms)
        expected = [log_a_reference(q, sigma, int(a), deltas, max_terms) for a in alphas]
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0.0)
    # The control: σ(1 + 1e-6) is told apart.
    deltas = wbk.log_forward_diffs(2.5, 256)
    moved = wbk.log_a_ints(0.3, 2.5 * (1 + 1e-6), GROUPS[1], deltas)
    expected = [log_a_reference(0.3, 2.5, int(a), deltas) for a in GROUPS[1]]
    assert not np.allclose(moved, expected, rtol=1e-12, atol=0.0)


def test_a_cut_sum_is_a_lower_bound() -> None:
    q, sigma = 0.4, 3.0
    deltas = wbk.log_forward_diffs(sigma, 256)
    full = wbk.log_a_ints(q, sigma, GROUPS[2], deltas)
    cut = wbk.log_a_ints(q, sigma, GROUPS[2], deltas, max_terms=64)
    assert np.all(cut <= full) and np.any(cut < full)


def test_the_order_grid_is_shared_and_read_only() -> None:
    """The orders' quantities are computed once and reused: the second call with the same
    orders returns the very same grid, whose arrays cannot be changed by a caller."""
    key = GROUPS[0].astype(np.int64).tobytes()
    grid = wbk.order_grid(key, 64)
    assert wbk.order_grid(key, 64) is grid
    with pytest.raises(ValueError, match="read-only"):
        grid.log_comb[0, 0] = 0.0


def test_log_a_refuses_short_differences_and_non_integer_orders() -> None:
    deltas = wbk.log_forward_diffs(2.0, 8)
    with pytest.raises(ValueError, match="deltas of 3 values is not allowed; must reach index 7"):
        wbk.log_a_ints(0.3, 2.0, np.arange(2, 9), deltas[:3])
    with pytest.raises(ConfigError, match="orders .* not allowed; must be integers"):
        wbk.log_a_ints(0.3, 2.0, np.array([2.5, 3.0]), deltas)


@pytest.mark.parametrize("sigma, n", [(4.0, 256), (1.04, 64), (2.9, 128), (12.0, 256),
                                      (69.97, 256)])
def test_the_series_is_within_its_stated_error(sigma: float, n: int) -> None:
    """The positive series alone is within SERIES_ATOL of the truth (TRUTH_ATOL's part),
    also at the most terms it is summed for (2c(n + 3)² ≈ 4200 at the first two points);
    beyond wbk.SERIES_MAX_STEPS it is not used (empty)."""
    c = 1.0 / (2.0 * sigma**2)
    series = wbk.series_kernel(c, n, wbk.SERIES_MAX_STEPS)
    truth = true_log_diffs(sigma, n)
    assert np.array_equal(series[~np.isfinite(truth)], truth[~np.isfinite(truth)])
    finite = np.isfinite(truth)
    assert np.max(np.abs(series[finite] - truth[finite])) <= SERIES_ATOL
    assert wbk.series_kernel(1.0 / (2.0 * 3.9**2), 256, wbk.SERIES_MAX_STEPS).size == 0


@pytest.mark.parametrize("n", [16, 64, 128, 256])
def test_the_triangle_alone_is_exact_where_the_series_is_not_summed(n: int) -> None:
    """Just below the hand-over, σ = (n + 3)/√SERIES_MAX_STEPS (1 − 1e-3), the series is not
    summed and the difference triangle alone is within TRUTH_ATOL + 4 ulps (measured ≤ 3.3e-11
    at n = 256, ≤ 1.3e-11 below): the smaller σ, the less it cancels."""
    sigma = (n + 3) / math.sqrt(wbk.SERIES_MAX_STEPS) * (1 - 1e-3)
    assert wbk.series_kernel(1.0 / (2.0 * sigma**2), n, wbk.SERIES_MAX_STEPS).size == 0
    assert truth_gap_ok(wbk.log_forward_diffs(sigma, n), true_log_diffs(sigma, n)).all()
