"""Small dense linear algebra for the policies' compiled kernels (`dpbandits.jit`).

The matrices here are the policies' d × d statistics (d ≤ 50), so plain loops beat calls into
LAPACK: A = LLᵀ (Cholesky, lower), triangular solves, A⁻¹b, ‖x‖_{A⁻¹} = ‖L⁻¹x‖, ln det A and
rank-one updates. Eigenvalues go through numpy's `eigvalsh`/`eigh`, which numba compiles to
LAPACK. Every function takes and returns float64 arrays and can be called from Python as well.
"""

from __future__ import annotations

import math

import numpy as np

from dpbandits.jit import jit


@jit
def cholesky_into(a: np.ndarray, out: np.ndarray) -> bool:
    """The lower Cholesky factor L of the symmetric matrix whose lower triangle is `a`, written
    into `out` (upper triangle zero); False when `a` is not positive definite."""
    n = a.shape[0]
    for j in range(n):
        s = a[j, j]
        for k in range(j):
            s -= out[j, k] * out[j, k]
        if not s > 0.0:  # also NaN
            return False
        pivot = math.sqrt(s)
        out[j, j] = pivot
        for i in range(j + 1, n):
            s = a[i, j]
            for k in range(j):
                s -= out[i, k] * out[j, k]
            out[i, j] = s / pivot
        for i in range(j):
            out[i, j] = 0.0
    return True


@jit
def cholesky(a: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor of a symmetric positive definite matrix (lower triangle read)."""
    out = np.empty_like(a)
    if not cholesky_into(a, out):
        raise np.linalg.LinAlgError("Cholesky failed: the matrix is not positive definite")
    return out


@jit
def solve_lower_into(factor: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    """out = L⁻¹x (forward substitution)."""
    n = factor.shape[0]
    for i in range(n):
        s = x[i]
        for k in range(i):
            s -= factor[i, k] * out[k]
        out[i] = s / factor[i, i]


@jit
def solve_lower_t_into(factor: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    """out = L⁻ᵀy (back substitution); with y ~ N(0, I) a draw from N(0, A⁻¹)."""
    n = factor.shape[0]
    for i in range(n - 1, -1, -1):
        s = y[i]
        for k in range(i + 1, n):
            s -= factor[k, i] * out[k]
        out[i] = s / factor[i, i]


@jit
def solve_lower_t(factor: np.ndarray, y: np.ndarray) -> np.ndarray:
    """L⁻ᵀy."""
    out = np.empty_like(y)
    solve_lower_t_into(factor, y, out)
    return out


@jit
def cho_solve(factor: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A⁻¹b from the lower Cholesky factor L of A: L⁻ᵀ(L⁻¹b)."""
    y = np.empty_like(b)
    solve_lower_into(factor, b, y)
    out = np.empty_like(b)
    solve_lower_t_into(factor, y, out)
    return out


@jit
def dot(x: np.ndarray, y: np.ndarray) -> float:
    """xᵀy, summed in index order."""
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i] * y[i]
    return total


@jit
def inverse_norm(factor: np.ndarray, x: np.ndarray, work: np.ndarray) -> float:
    """‖x‖_{A⁻¹} = ‖L⁻¹x‖ (`work` holds L⁻¹x afterwards)."""
    solve_lower_into(factor, x, work)
    return math.sqrt(dot(work, work))


@jit
def widths(factor: np.ndarray, arms: np.ndarray) -> np.ndarray:
    """‖x‖_{A⁻¹} for every row x of `arms`."""
    work = np.empty(factor.shape[0])
    out = np.empty(arms.shape[0])
    for i in range(arms.shape[0]):
        out[i] = inverse_norm(factor, arms[i], work)
    return out


@jit
def log_det(factor: np.ndarray) -> float:
    """ln det A = 2 Σ ln L_ii."""
    total = 0.0
    for i in range(factor.shape[0]):
        total += math.log(factor[i, i])
    return 2.0 * total


@jit
def add_outer(a: np.ndarray, x: np.ndarray, weight: float) -> None:
    """a ← a + weight·x xᵀ (the whole matrix)."""
    n = x.shape[0]
    for i in range(n):
        wx = weight * x[i]
        for j in range(n):
            a[i, j] += wx * x[j]


@jit
def add_scaled(b: np.ndarray, x: np.ndarray, weight: float) -> None:
    """b ← b + weight·x."""
    for i in range(b.shape[0]):
        b[i] += weight * x[i]


@jit
def lambda_min(a: np.ndarray) -> float:
    """Smallest eigenvalue of a symmetric matrix (the whole matrix is given)."""
    return np.linalg.eigvalsh(a)[0]


@jit
def project_ball_into(x: np.ndarray, radius: float) -> None:
    """x ← x·(radius/‖x‖) where ‖x‖ > radius: the Euclidean projection onto {‖x‖ ≤ radius}."""
    norm = math.sqrt(dot(x, x))
    if not norm <= radius:
        for i in range(x.shape[0]):
            x[i] = x[i] * (radius / norm)
