"""Linear algebra of the ridge statistics, all from one Cholesky factor (no inverse formed):
A = LLᵀ from the lower triangle, A⁻¹b, draws N(0, A⁻¹), widths ‖x‖_{A⁻¹}, ln det A, λ_min(A).

The policies call these every round, so the LAPACK/BLAS routines get their arguments by
position: f2py's keyword parsing costs more than a d = 20 solve (tests/test_linalg.py checks
that the positional calls return the keyword calls' bits).
"""

from __future__ import annotations

import numpy as np

from dpbandits.scipy_kernels import blas, lapack

_dpotrf, _dpotrs, _dtrtrs = lapack.dpotrf, lapack.dpotrs, lapack.dtrtrs
_dsyevx, _dtrsm = lapack.dsyevx, blas.dtrsm


def cholesky(a: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor from the lower triangle of a (raises if not positive definite)."""
    factor, info = _dpotrf(a, 1, 0)  # lower, clean = 0
    if info != 0:
        raise np.linalg.LinAlgError(f"Cholesky failed (info = {info})")
    return factor


def cho_solve(factor: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A⁻¹b from the lower Cholesky factor of A."""
    out, info = _dpotrs(factor, b, 1)  # lower
    if info != 0:
        raise np.linalg.LinAlgError(f"Cholesky solve failed (info = {info})")
    return out


def solve_lower_t(factor: np.ndarray, z: np.ndarray) -> np.ndarray:
    """L⁻ᵀz: with z ~ N(0, I) this is a draw from N(0, A⁻¹)."""
    out, info = _dtrtrs(factor, z, 1, 1)  # lower, trans
    if info != 0:
        raise np.linalg.LinAlgError(f"triangular solve failed (info = {info})")
    return out


def widths(factor: np.ndarray, arms: np.ndarray) -> np.ndarray:
    """‖x‖_{A⁻¹} = ‖L⁻¹x‖ for every row x of `arms`."""
    w = _dtrsm(1.0, factor, arms.T, 0, 1)  # alpha, a, b, side = left, lower
    return np.sqrt(np.einsum("ij,ij->j", w, w))


def log_det(factor: np.ndarray) -> float:
    """ln det A = 2 Σ ln L_ii."""
    return 2.0 * float(np.log(factor.diagonal()).sum())


def lambda_min(a_lower: np.ndarray) -> float:
    """Smallest eigenvalue of the symmetric matrix whose lower triangle is given (LAPACK dsyevx)."""
    # compute_v = 0, range "I", lower = 1, vl and vu unused (defaults), il = iu = 1
    w, _, _, _, info = _dsyevx(a_lower, 0, "I", 1, 0.0, 1.0, 1, 1)
    if info != 0:
        raise np.linalg.LinAlgError(f"eigenvalue computation failed (info = {info})")
    return float(w[0])


def symmetric(a_lower: np.ndarray) -> np.ndarray:
    """Full symmetric matrix from its lower triangle."""
    return np.tril(a_lower) + np.tril(a_lower, -1).T
