"""Small dense linear algebra kernels (`dpbandits.linalg`) against numpy's dense formulas."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits.linalg import (
    add_outer,
    add_scaled,
    cho_solve,
    cholesky,
    cholesky_into,
    dot,
    first_argmax,
    inverse_norm,
    lambda_min,
    log_det,
    smallest_eigenvalue,
    solve_lower_into,
    solve_lower_t,
    solve_lower_t_into,
    tridiagonalise,
    widths,
)

U = 2.0**-52


def spd(d: int, seed: int = 0, rows: int | None = None) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((3 * d if rows is None else rows, d))
    return np.eye(d) + x.T @ x


def test_factor_and_solves_match_dense_formulas() -> None:
    g = np.random.default_rng(1)
    for d in (1, 2, 6, 20, 50):
        a = spd(d, seed=d)
        factor = cholesky(a)
        np.testing.assert_allclose(factor, np.linalg.cholesky(a), rtol=1e-12, atol=1e-12)
        assert np.array_equal(factor, np.tril(factor))
        b = g.standard_normal(d)
        inv = np.linalg.inv(a)
        np.testing.assert_allclose(cho_solve(factor, b), inv @ b, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(solve_lower_t(factor, b), np.linalg.solve(factor.T, b),
                                   rtol=1e-9, atol=1e-12)
        out = np.empty(d)
        solve_lower_into(factor, b, out)
        np.testing.assert_allclose(out, np.linalg.solve(factor, b), rtol=1e-9, atol=1e-12)
        solve_lower_t_into(factor, b, out)
        np.testing.assert_allclose(out, np.linalg.solve(factor.T, b), rtol=1e-9, atol=1e-12)
        arms = g.standard_normal((5, d))
        norms = np.sqrt(np.einsum("ij,jk,ik->i", arms, inv, arms))
        np.testing.assert_allclose(widths(factor, arms), norms, rtol=1e-10)
        assert inverse_norm(factor, arms[0], np.empty(d)) == pytest.approx(norms[0], rel=1e-10)
        assert log_det(factor) == pytest.approx(np.linalg.slogdet(a)[1], rel=1e-12)
        assert dot(arms[0], b) == pytest.approx(float(arms[0] @ b), rel=1e-12, abs=1e-12)


def test_cholesky_reads_the_lower_triangle_and_refuses_what_is_not_positive_definite() -> None:
    a = spd(5)
    upper_garbage = np.tril(a) + np.triu(np.full((5, 5), 7.0), 1)
    assert cholesky(upper_garbage).tobytes() == cholesky(a).tobytes()
    out = np.empty((3, 3))
    assert not cholesky_into(-np.eye(3), out)
    assert not cholesky_into(np.full((3, 3), np.nan), out)
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        cholesky(np.diag([1.0, 0.0, 1.0]))


def test_rank_one_and_scaled_updates() -> None:
    a, b = np.eye(4), np.arange(4.0)
    x = np.array([0.5, -1.0, 0.25, 2.0])
    add_outer(a, x, 3.0)
    add_scaled(b, x, -2.0)
    np.testing.assert_array_equal(a, np.eye(4) + 3.0 * np.outer(x, x))
    np.testing.assert_array_equal(b, np.arange(4.0) - 2.0 * x)


def test_ts_draws_have_covariance_a_inverse() -> None:
    """ξ = L⁻ᵀz, z ~ N(0, I): covariance A⁻¹ (entrywise within 5 s.e.)."""
    a = spd(4, seed=3) / 10
    factor = cholesky(a)
    n = 40_000
    z = np.random.default_rng(5).standard_normal((n, 4))
    xi = np.array([solve_lower_t(factor, row) for row in z])
    cov = np.cov(xi.T)
    target = np.linalg.inv(a)
    se = np.sqrt((target**2 + np.outer(np.diag(target), np.diag(target))) / n)
    assert np.all(np.abs(cov - target) < 5 * se)


def test_tridiagonal_form_keeps_the_eigenvalues() -> None:
    g = np.random.default_rng(2)
    for d in (1, 2, 3, 7, 20, 33):
        a = spd(d, seed=d) * g.uniform(0.1, 10)
        diag, off = np.empty(d), np.empty(d)
        tridiagonalise(a, np.empty((d, d)), diag, off)
        t = np.diag(diag) + np.diag(off[:d - 1], 1) + np.diag(off[:d - 1], -1)
        np.testing.assert_allclose(np.linalg.eigvalsh(t), np.linalg.eigvalsh(a),
                                   atol=50 * U * np.linalg.norm(a, 2))


def test_smallest_eigenvalue_within_a_few_roundings_of_lapacks() -> None:
    """Random Gram matrices, repeated smallest eigenvalues (λI + x xᵀ), tiny and indefinite
    ones: |λ_min − LAPACK's| ≤ 16u‖A‖ (LAPACK's own error is of that order)."""
    g = np.random.default_rng(0)
    worst = 0.0
    for trial in range(1500):
        d = int(g.integers(1, 52))
        x = g.standard_normal((int(g.integers(0, 200)), d))
        x /= np.maximum(1.0, np.linalg.norm(x, axis=1))[:, None]
        a = g.uniform(0.01, 3.0) * np.eye(d) + x.T @ x
        if trial % 5 == 0:
            a = np.eye(d) + (np.outer(x[0], x[0]) if len(x) else 0.0)
        if trial % 7 == 0:
            a *= 1e-6
        if trial % 11 == 0:
            a -= 2.0 * np.eye(d)
        reference = np.linalg.eigvalsh(a)[0]
        worst = max(worst, abs(lambda_min(a) - reference) / (U * np.linalg.norm(a, 2)))
    assert worst <= 16.0
    n = 4
    assert smallest_eigenvalue(np.eye(n), np.empty((n, n)), np.empty(n), np.empty(n)) == 1.0
    assert lambda_min(np.array([[2.0, 1.0], [1.0, 2.0]])) == pytest.approx(1.0, rel=4 * U)
    assert np.isnan(lambda_min(np.array([[1.0, np.nan], [np.nan, 1.0]])))


def test_first_argmax_is_numpys() -> None:
    for values in ([1.0, 3.0, 3.0, 2.0], [-np.inf, -np.inf], [0.0, np.nan, 5.0, np.nan],
                   [2.0]):
        array = np.array(values)
        assert first_argmax(array) == int(array.argmax())
