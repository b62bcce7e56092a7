"""Small dense linear algebra for the policies' compiled kernels (`dpbandits.jit`).

The matrices here are the policies' d × d statistics (d ≤ 50), so plain loops beat calls into
LAPACK: A = LLᵀ (Cholesky, lower), triangular solves, A⁻¹b, ‖x‖_{A⁻¹} = ‖L⁻¹x‖, ln det A and
rank-one updates, and the smallest eigenvalue (tridiagonalisation and bisection). Every
function takes and returns float64 arrays and can be called from Python as well.
"""

from __future__ import annotations

import math

import numpy as np

from dpbandits.jit import jit

EPS = 2.0**-52  # the spacing of doubles at 1
TINY = 2.0**-1022  # the smallest normal double


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
def cho_solve_into(factor: np.ndarray, b: np.ndarray, work: np.ndarray, out: np.ndarray) -> None:
    """out = A⁻¹b from the lower Cholesky factor L of A (`work` holds L⁻¹b afterwards)."""
    solve_lower_into(factor, b, work)
    solve_lower_t_into(factor, work, out)


@jit
def dot(x: np.ndarray, y: np.ndarray) -> float:
    """xᵀy, summed in index order."""
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i] * y[i]
    return total


@jit
def first_argmax(scores: np.ndarray) -> int:
    """numpy's argmax: the index of the first NaN, else of the first largest entry."""
    best, index = scores[0], 0
    if best != best:
        return 0
    for i in range(1, scores.shape[0]):
        s = scores[i]
        if s != s:
            return i
        if s > best:
            best, index = s, i
    return index


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
def tridiagonalise(a: np.ndarray, work: np.ndarray, diag: np.ndarray, off: np.ndarray) -> None:
    """The tridiagonal T = QᵀAQ of the symmetric matrix `a` (whole matrix given) by Householder
    reflections (Golub & Van Loan, Alg. 8.3.1): its diagonal and subdiagonal; `work` (d × d)
    is overwritten."""
    n = a.shape[0]
    for i in range(n):
        for j in range(n):
            work[i, j] = a[i, j]
    v = np.empty(n)
    p = np.empty(n)
    for k in range(n - 2):
        x0 = work[k, k + 1]
        norm2 = 0.0
        for i in range(k + 1, n):
            norm2 += work[k, i] * work[k, i]
        diag[k] = work[k, k]
        alpha = -math.sqrt(norm2) if x0 > 0.0 else math.sqrt(norm2)
        off[k] = alpha
        h = norm2 - x0 * alpha  # ‖v‖²/2 for v = x − αe₁
        if h == 0.0:
            continue
        for i in range(k + 1, n):
            v[i] = work[k, i]
            p[i] = 0.0
        v[k + 1] = x0 - alpha
        for i in range(k + 1, n):  # p = W v/h (W symmetric: accumulated row by row)
            vi = v[i] / h
            for j in range(k + 1, n):
                p[j] += work[i, j] * vi
        half = 0.0
        for i in range(k + 1, n):
            half += v[i] * p[i]
        half /= 2.0 * h
        for i in range(k + 1, n):
            p[i] -= half * v[i]
        for i in range(k + 1, n):  # W ← (I − vvᵀ/h) W (I − vvᵀ/h) = W − v pᵀ − p vᵀ
            vi, pi = v[i], p[i]
            for j in range(k + 1, n):
                work[i, j] -= vi * p[j] + pi * v[j]
    if n >= 2:
        diag[n - 2] = work[n - 2, n - 2]
        off[n - 2] = work[n - 2, n - 1]
    diag[n - 1] = work[n - 1, n - 1]


@jit
def sturm_counts(diag: np.ndarray, off: np.ndarray, x1: float, x2: float, x3: float,
                 pivmin: float) -> tuple[int, int, int]:
    """How many eigenvalues of the tridiagonal (diag, off) lie below each of x1, x2, x3: the
    negative pivots of T − xI = LDLᵀ (Sturm; a pivot below `pivmin` in size counts as −pivmin,
    as LAPACK's dlaebz)."""
    c1 = c2 = c3 = 0
    q1 = q2 = q3 = 1.0
    e2 = 0.0
    for i in range(diag.shape[0]):
        q1 = diag[i] - x1 - e2 / q1
        q2 = diag[i] - x2 - e2 / q2
        q3 = diag[i] - x3 - e2 / q3
        if abs(q1) < pivmin:
            q1 = -pivmin
        if abs(q2) < pivmin:
            q2 = -pivmin
        if abs(q3) < pivmin:
            q3 = -pivmin
        c1 += q1 < 0.0
        c2 += q2 < 0.0
        c3 += q3 < 0.0
        if i < off.shape[0]:
            e2 = off[i] * off[i]
    return c1, c2, c3


@jit
def smallest_eigenvalue(a: np.ndarray, work: np.ndarray, diag: np.ndarray,
                        off: np.ndarray) -> float:
    """Smallest eigenvalue of a symmetric matrix (the whole matrix given): Householder
    tridiagonalisation, then bisection by Sturm counts (as LAPACK's dsyevx for one eigenvalue)
    from Gershgorin's lower bound and the smallest diagonal entry, to a relative width of 2u;
    `work` (d × d), `diag` and `off` (d) are scratch."""
    n = a.shape[0]
    tridiagonalise(a, work, diag, off)
    lo, hi, big = math.inf, diag[0], 0.0
    for i in range(n):
        radius = 0.0
        if i > 0:
            radius += abs(off[i - 1])
        if i < n - 1:
            radius += abs(off[i])
            big = max(big, off[i] * off[i])
        lo = min(lo, diag[i] - radius)
        hi = min(hi, diag[i])  # a Rayleigh quotient: λ_min ≤ T_ii
    if not (lo <= hi):  # NaN
        return math.nan
    pivmin = TINY * max(1.0, big)
    while hi - lo > 2.0 * EPS * max(abs(lo), abs(hi)) + pivmin:
        width = hi - lo
        x1, x2, x3 = lo + 0.25 * width, lo + 0.5 * width, lo + 0.75 * width
        if not lo < x1 < x2 < x3 < hi:
            break
        c1, c2, c3 = sturm_counts(diag, off, x1, x2, x3, pivmin)
        if c1 >= 1:
            hi = x1
        elif c2 >= 1:
            lo, hi = x1, x2
        elif c3 >= 1:
            lo, hi = x2, x3
        else:
            lo = x3
    return 0.5 * (lo + hi)


@jit
def lambda_min(a: np.ndarray) -> float:
    """Smallest eigenvalue of a symmetric matrix (the whole matrix given)."""
    n = a.shape[0]
    return smallest_eigenvalue(a, np.empty((n, n)), np.empty(n), np.empty(n))


@jit
def project_ball_into(x: np.ndarray, radius: float) -> None:
    """x ← x·(radius/‖x‖) where ‖x‖ > radius: the Euclidean projection onto {‖x‖ ≤ radius}."""
    norm = math.sqrt(dot(x, x))
    if not norm <= radius:
        for i in range(x.shape[0]):
            x[i] = x[i] * (radius / norm)
