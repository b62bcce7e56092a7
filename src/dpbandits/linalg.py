"""Linear algebra of the ridge statistics, all from one Cholesky factor (no inverse formed):
A = LLᵀ from the lower triangle, A⁻¹b, draws N(0, A⁻¹), widths ‖x‖_{A⁻¹}, ln det A, λ_min(A)."""

from __future__ import annotations

import numpy as np

from dpbandits.scipy_kernels import blas, lapack


def cholesky(a: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor from the lower triangle of a (raises if not positive definite)."""
    factor, info = lapack.dpotrf(a, lower=1, clean=0)
    if info != 0:
        raise np.linalg.LinAlgError(f"Cholesky failed (info = {info})")
    return factor


def cho_solve(factor: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A⁻¹b from the lower Cholesky factor of A."""
    out, info = lapack.dpotrs(factor, b, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"Cholesky solve failed (info = {info})")
    return out


def solve_lower_t(factor: np.ndarray, z: np.ndarray) -> np.ndarray:
    """L⁻ᵀz: with z ~ N(0, I) this is a draw from N(0, A⁻¹)."""
    out, info = lapack.dtrtrs(factor, z, lower=1, trans=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"triangular solve failed (info = {info})")
    return out


def widths(factor: np.ndarray, arms: np.ndarray) -> np.ndarray:
    """‖x‖_{A⁻¹} = ‖L⁻¹x‖ for every row x of `arms`."""
    w = blas.dtrsm(1.0, factor, arms.T, lower=1)
    return np.sqrt(np.einsum("ij,ij->j", w, w))


def log_det(factor: np.ndarray) -> float:
    """ln det A = 2 Σ ln L_ii."""
    return 2.0 * float(np.log(np.diagonal(factor)).sum())


def lambda_min(a_lower: np.ndarray) -> float:
    """Smallest eigenvalue of the symmetric matrix whose lower triangle is given (LAPACK dsyevx)."""
    w, _, _, _, info = lapack.dsyevx(a_lower, compute_v=0, range="I", il=1, iu=1, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"eigenvalue computation failed (info = {info})")
    return float(w[0])


def symmetric(a_lower: np.ndarray) -> np.ndarray:
    """Full symmetric matrix from its lower triangle."""
    return np.tril(a_lower) + np.tril(a_lower, -1).T
