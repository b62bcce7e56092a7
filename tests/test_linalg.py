"""Linear algebra of the ridge statistics from one Cholesky factor."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import blas, lapack

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


def test_positional_calls_return_the_keyword_calls_bits() -> None:
    """The helpers pass LAPACK/BLAS their arguments by position (cheaper in f2py): the same
    routines, the same bits as scipy's documented keyword calls."""
    g = np.random.default_rng(3)
    for _ in range(200):
        d = int(g.integers(1, 25))
        x = g.standard_normal((int(g.integers(1, 400)), d))
        x /= np.maximum(1.0, np.linalg.norm(x, axis=1))[:, None]
        a = np.asfortranarray(g.uniform(0.05, 3.0) * np.eye(d) + x.T @ x)
        arms, v = g.standard_normal((int(g.integers(1, 9)), d)), g.standard_normal(d)
        factor = lapack.dpotrf(a, lower=1, clean=0)[0]
        assert cholesky(a).tobytes() == factor.tobytes()
        assert cho_solve(factor, v).tobytes() == lapack.dpotrs(factor, v, lower=1)[0].tobytes()
        assert (solve_lower_t(factor, v).tobytes()
                == lapack.dtrtrs(factor, v, lower=1, trans=1)[0].tobytes())
        if d > 1:  # control: a positional flag read wrongly (no transpose) changes the bits
            assert (solve_lower_t(factor, v).tobytes()
                    != lapack.dtrtrs(factor, v, lower=1, trans=0)[0].tobytes())
        w = blas.dtrsm(1.0, factor, arms.T, lower=1)
        assert widths(factor, arms).tobytes() == np.sqrt(np.einsum("ij,ij->j", w, w)).tobytes()
        smallest = lapack.dsyevx(a, compute_v=0, range="I", il=1, iu=1, lower=1)[0][0]
        assert lambda_min(a) == smallest
        assert log_det(factor) == 2.0 * float(np.log(np.diagonal(factor)).sum())
