"""The WBK 2019 Thm 27 bound: forward differences against dp-accounting, log A_α against the
theorem's sum written out term by term."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as rdp_ref

from dpbandits.errors import ConfigError
from dpbandits.privacy import wbk

DETERMINED = 1e-12  # a reference value that moves less than this (relative) per ulp of σ
RTOL = 1e-10


def reference_diffs(sigma: float, n: int) -> np.ndarray:
    """dp-accounting's log|Δ^{i+1}| at 0 of e^{cgf}, cgf(x) = x(x + 1)/(2σ²)."""
    deltas, _ = rdp_ref._get_forward_diffs(lambda x: x * 1.0 * (x + 1) / (2.0 * sigma**2), n)
    return deltas


def compare_diffs(sigma: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Where dp-accounting's differences are determined (they move < 1e-12 when σ moves by
    one ulp) and whether ours are within 1e-10 of them there and within that one-ulp spread
    elsewhere (cancelled entries, −∞, must agree exactly)."""
    ours, ref = wbk.log_forward_diffs(sigma, n), reference_diffs(sigma, n)
    moved = [reference_diffs(np.nextafter(sigma, towards), n) for towards in (0.0, np.inf)]
    finite = np.isfinite(ref)
    assert np.array_equal(np.isfinite(ours), finite)
    assert np.array_equal(ours[~finite], ref[~finite])
    with np.errstate(invalid="ignore"):
        spread = np.max([np.abs(m - ref) for m in moved], axis=0)
    spread[~np.isfinite(spread)] = np.inf
    determined = finite & (spread <= DETERMINED * np.abs(ref))
    gap = np.where(finite, np.abs(ours - np.where(finite, ref, 0.0)), 0.0)
    tolerance = np.where(determined, RTOL * np.abs(ref), np.maximum(spread, RTOL * np.abs(ref)))
    return determined, (gap <= tolerance) | ~finite


@pytest.mark.parametrize("sigma, n", [(0.05, 64), (0.7, 64), (1.1, 256), (3.0, 128),
                                      (19.82702778847933, 192), (70.0, 64), (400.0, 32)])
def test_forward_differences_are_dp_accountings(sigma: float, n: int) -> None:
    """Well-conditioned entries to 1e-10; where the differences cancel (large σ, high order),
    within dp-accounting's own one-ulp spread; low orders are always determined, so the
    comparison is never vacuous."""
    determined, close = compare_diffs(sigma, n)
    assert determined[1:8].all()  # the first is log 0
    assert close.all()


def test_the_comparison_sees_a_small_change_of_sigma() -> None:
    """The control: differences at σ(1 + 1e-6) are not dp-accounting's at σ."""
    sigma, n = 1.7, 32
    moved = wbk.log_forward_diffs(sigma * (1 + 1e-6), n)[1:]
    ref = reference_diffs(sigma, n)[1:]
    assert not np.all(np.abs(moved - ref) <= RTOL * np.abs(ref))


def test_forward_differences_of_every_length() -> None:
    """n + 2 values for every n ≥ 0; the first is log|e^{cgf(0)} − 1| = log(1 − 1) = −∞."""
    for n in (0, 1, 2, 5):
        deltas = wbk.log_forward_diffs(2.0, n)
        assert deltas.shape == (n + 2,)
        assert deltas[0] == -math.inf
        np.testing.assert_allclose(deltas[1:], reference_diffs(2.0, n)[1:], rtol=RTOL)


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
