"""Linear algebra of the ridge statistics from one Cholesky factor."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits.linalg import (
    cho_solve,
    cholesky,
    lambda_min,
    log_det,
    solve_lower_t,
    symmetric,
    widths,
)


def spd(d: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((3 * d, d))
    return np.asfortranarray(np.eye(d) + x.T @ x)


def test_linear_algebra_helpers_match_dense_formulas() -> None:
    a = spd(6)
    lower = np.tril(a)  # only the lower triangle is read
    factor = cholesky(np.asfortranarray(lower))
    inv = np.linalg.inv(a)
    b = np.arange(6.0)
    np.testing.assert_allclose(cho_solve(factor, b), inv @ b, rtol=1e-10)
    x = np.random.default_rng(1).standard_normal((4, 6))
    np.testing.assert_allclose(widths(factor, x), np.sqrt(np.einsum("ij,jk,ik->i", x, inv, x)))
    assert log_det(factor) == pytest.approx(np.linalg.slogdet(a)[1])
    assert lambda_min(np.asfortranarray(lower)) == pytest.approx(np.linalg.eigvalsh(a)[0])
    np.testing.assert_array_equal(symmetric(lower), a)
    with pytest.raises(np.linalg.LinAlgError):
        cholesky(np.asfortranarray(-np.eye(3)))


def test_ts_draws_have_covariance_a_inverse() -> None:
    """ξ = L⁻ᵀz, z ~ N(0, I): covariance A⁻¹ (entrywise within 5 s.e.)."""
    a = spd(4, seed=3) / 10
    factor = cholesky(a)
    n = 40_000
    z = np.random.default_rng(5).standard_normal((4, n))
    xi = solve_lower_t(factor, z)
    cov = np.cov(xi)
    target = np.linalg.inv(a)
    se = np.sqrt((target**2 + np.outer(np.diag(target), np.diag(target))) / n)
    assert np.all(np.abs(cov - target) < 5 * se)
