"""G-optimal experimental design by Frank–Wolfe (Kiefer–Wolfowitz) on the span of an action set.

docs/linear.md, "G-optimal design". The design is one compiled kernel (`design_of`): the span's
orthonormal basis, the greedy spanning start and the Frank–Wolfe steps; `compute_design` checks
its input and wraps it, and `draw_index` draws a row from its weights.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np

from dpbandits.errors import ConfigError
from dpbandits.jit import jit
from dpbandits.linalg import add_outer, cholesky_into, solve_lower_into, solve_lower_t_into

RANK_TOL = 1e-10
MAX_ITER = 10_000  # Frank–Wolfe steps at most
TIE_TOL = 1e-12  # residual norms this close (relative) count as equal in the greedy start
JACOBI_SWEEPS = 60  # one-sided Jacobi sweeps at most (a handful reach machine precision)


@dataclass(frozen=True)
class Design:
    """A design on the rows of an action matrix, computed in the span coordinates x = U a."""

    weights: np.ndarray  # (n,) π ≥ 0, Σπ = 1, support = {π > 0}
    basis: np.ndarray  # (k, d) orthonormal rows U spanning the action rows
    g: float  # max_a ||x_a||²_{V(π)^-1}
    iterations: int

    @property
    def rank(self) -> int:
        return int(self.basis.shape[0])

    @property
    def support(self) -> np.ndarray:
        """Indices of the core set C = {a : π(a) > 0}."""
        return np.flatnonzero(self.weights > 0)


@jit
def rotate_columns(a: np.ndarray, p: int, q: int, c: float, s: float) -> None:
    """Columns p, q of `a` ← (c a_p − s a_q, s a_p + c a_q): a Jacobi rotation."""
    for i in range(a.shape[0]):
        ap = a[i, p]
        aq = a[i, q]
        a[i, p] = c * ap - s * aq
        a[i, q] = s * ap + c * aq


@jit
def span_basis(points: np.ndarray) -> np.ndarray:
    """Orthonormal rows U (k × d) of the row span: the right singular vectors whose singular value
    exceeds 1e-10·max(1, s₁), by one-sided Jacobi rotations of the columns (Hestenes), in
    column order."""
    n, d = points.shape
    u = points.copy()
    v = np.zeros((d, d))
    for i in range(d):
        v[i, i] = 1.0
    negligible = 0.0  # squared column norms below 1e-20·‖A‖_F: numerically zero columns
    for i in range(n):
        for j in range(d):
            negligible += u[i, j] * u[i, j]
    negligible *= 1e-40
    for _ in range(JACOBI_SWEEPS):
        rotated = False
        for p in range(d - 1):
            for q in range(p + 1, d):
                alpha = 0.0
                beta = 0.0
                gamma = 0.0
                for i in range(n):
                    alpha += u[i, p] * u[i, p]
                    beta += u[i, q] * u[i, q]
                    gamma += u[i, p] * u[i, q]
                if (alpha <= negligible or beta <= negligible
                        or abs(gamma) <= 1e-15 * math.sqrt(alpha) * math.sqrt(beta)):
                    continue
                rotated = True
                zeta = (beta - alpha) / (2.0 * gamma)
                t = 1.0 / (abs(zeta) + math.hypot(1.0, zeta))
                if zeta < 0.0:
                    t = -t
                c = 1.0 / math.sqrt(1.0 + t * t)
                s = c * t
                rotate_columns(u, p, q, c, s)
                rotate_columns(v, p, q, c, s)
        if not rotated:
            break
    sv = np.empty(d)
    largest = 0.0
    for j in range(d):
        total = 0.0
        for i in range(n):
            total += u[i, j] * u[i, j]
        sv[j] = math.sqrt(total)
        largest = max(largest, sv[j])
    threshold = RANK_TOL * max(1.0, largest)
    k = 0
    for j in range(d):
        if sv[j] > threshold:
            k += 1
    basis = np.empty((k, d))
    r = 0
    for j in range(d):
        if sv[j] > threshold:
            for i in range(d):
                basis[r, i] = v[i, j]
            r += 1
    return basis


@jit
def project(points: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """x = a Uᵀ: the points in the span's coordinates."""
    n, d = points.shape
    k = basis.shape[0]
    x = np.zeros((n, k))
    for i in range(n):
        for r in range(k):
            total = 0.0
            for c in range(d):
                total += points[i, c] * basis[r, c]
            x[i, r] = total
    return x


@jit
def greedy_spanning_set(x: np.ndarray) -> np.ndarray:
    """k rows picked by largest residual norm with Gram–Schmidt deflation, the first of the
    norms equal to the largest up to rounding (relative 1e-12: unit-norm actions tie).

    The greedy start of docs/linear.md, "G-optimal design".
    """
    n, k = x.shape
    residual = x.copy()
    norms = np.empty(n)
    u = np.empty(k)
    chosen = np.empty(k, dtype=np.int64)
    for c in range(k):
        for i in range(n):
            total = 0.0
            for b in range(k):
                total += residual[i, b] * residual[i, b]
            norms[i] = total
        for i in range(c):
            norms[chosen[i]] = -1.0
        largest = 0.0
        for i in range(n):
            largest = max(largest, norms[i])
        j = 0
        while norms[j] < largest * (1.0 - TIE_TOL):
            j += 1
        chosen[c] = j
        length = math.sqrt(norms[j])
        for b in range(k):
            u[b] = residual[j, b] / length
        for i in range(n):
            along = 0.0
            for b in range(k):
                along += residual[i, b] * u[b]
            for b in range(k):
                residual[i, b] -= along * u[b]
    return chosen


@jit
def design_inverse(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """V(π)⁻¹, V(π) = Σ π_j x_j x_jᵀ, column by column from its Cholesky factor (NaN where V(π)
    is not positive definite)."""
    n, k = x.shape
    v = np.zeros((k, k))
    for i in range(n):
        if weights[i] != 0.0:
            add_outer(v, x[i], weights[i])
    factor = np.empty((k, k))
    out = np.empty((k, k))
    if not cholesky_into(v, factor):
        out.fill(np.nan)
        return out
    unit = np.zeros(k)
    y = np.empty(k)
    column = np.empty(k)
    for c in range(k):
        unit[c] = 1.0
        solve_lower_into(factor, unit, y)
        solve_lower_t_into(factor, y, column)
        unit[c] = 0.0
        for r in range(k):
            out[r, c] = column[r]
    return out


@jit
def inverse_leverages(x: np.ndarray, v_inv: np.ndarray, h: np.ndarray) -> int:
    """h_j = x_jᵀ V⁻¹ x_j for every row; the index of the first largest."""
    n, k = x.shape
    j = 0
    for i in range(n):
        total = 0.0
        for b in range(k):
            inner = 0.0
            for a in range(k):
                inner += x[i, a] * v_inv[a, b]
            total += inner * x[i, b]
        h[i] = total
        if h[i] > h[j]:
            j = i
    return j


@jit
def step_inverse(v_inv: np.ndarray, x: np.ndarray, step: float, g: float) -> None:
    """V⁻¹ ← ((1 − λ)V + λxxᵀ)⁻¹ = (V⁻¹ − uuᵀ·λ/(1 − λ + λg))/(1 − λ), u = V⁻¹x (Sherman–
    Morrison)."""
    k = x.shape[0]
    u = np.empty(k)
    for a in range(k):
        total = 0.0
        for b in range(k):
            total += v_inv[a, b] * x[b]
        u[a] = total
    c = step / (1.0 - step + step * g)
    keep = 1.0 - step
    for a in range(k):
        for b in range(k):
            v_inv[a, b] = (v_inv[a, b] - u[a] * u[b] * c) / keep


@jit
def design_of(points: np.ndarray, tol: float, max_iter: int
              ) -> tuple[np.ndarray, np.ndarray, float, int]:
    """G-optimal design on the span of the rows of `points`: (π, basis U, g, steps).

    Fedorov–Wynn / Frank–Wolfe on log det V(π) with exact line search (Lattimore & Szepesvári,
    Bandit Algorithms, Ch. 21; Kiefer–Wolfowitz) in the span's coordinates x = Ua: from the
    uniform design on the greedy start, step to the point of largest leverage
    h = xᵀV(π)⁻¹x with λ = (g/k − 1)/(g − 1) until g ≤ (1 + tol)k or max_iter steps; V(π)⁻¹ is
    carried by Sherman–Morrison updates and the final g recomputed by Cholesky. An all-zero set
    has an empty basis, zero weights and g = NaN.
    """
    n = points.shape[0]
    basis = span_basis(points)
    k = basis.shape[0]
    if k == 0:
        return np.zeros(n), basis, np.nan, 0
    x = project(points, basis)
    weights = np.zeros(n)
    for j in greedy_spanning_set(x):
        weights[j] = 1.0 / k
    v_inv = design_inverse(x, weights)
    h = np.empty(n)
    it = 0
    while True:
        j = inverse_leverages(x, v_inv, h)
        g = h[j]
        if g <= (1.0 + tol) * k or it >= max_iter:
            break
        step = (g / k - 1.0) / (g - 1.0)
        for i in range(n):
            weights[i] *= 1.0 - step
        weights[j] += step
        step_inverse(v_inv, x[j], step, g)
        it += 1
    g = h[inverse_leverages(x, design_inverse(x, weights), h)]
    return weights, basis, g, it


@jit
def within_bound(g: float, k: int) -> bool:
    """Whether the achieved g is within the bound 2k that Hanna et al., Lemma 2 needs."""
    return g <= 2 * k * (1 + 1e-9)


@jit
def draw_index(weights: np.ndarray, rng: np.random.Generator) -> int:
    """`rng.choice(n, p=w/Σw)` of the weights clipped at 0: one `random()` draw against the
    normalised cumulative sums."""
    n = weights.shape[0]
    total = 0.0
    for i in range(n):
        total += max(weights[i], 0.0)
    cdf = np.empty(n)
    running = 0.0
    for i in range(n):
        running += max(weights[i], 0.0) / total
        cdf[i] = running
    u = rng.random()
    for i in range(n):
        if u < cdf[i] / cdf[n - 1]:
            return i
    return n - 1


def checked_g(g: float, k: int, max_iter: int) -> float:
    """g, once it is known to be within the bound 2k (else Frank–Wolfe failed)."""
    if not within_bound(g, k):
        raise RuntimeError(f"Frank–Wolfe did not reach g <= 2k = {2 * k} in {max_iter} steps")
    return g


def spanned(basis: np.ndarray) -> np.ndarray:
    """The basis of a set that spans at least one direction (else a ConfigError)."""
    if basis.shape[0] == 0:
        raise ConfigError("actions are all zero; the action set must span at least one direction")
    return basis


def check_points(points: np.ndarray, *, max_norm: float | None = 1.0) -> np.ndarray:
    """Validate an action matrix: finite, two-dimensional, non-empty, rows of norm ≤ max_norm."""
    a = np.asarray(points, dtype=float)
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 1:
        raise ConfigError(f"actions shape {a.shape} is not allowed; must be (n >= 1, d >= 1)")
    if not np.all(np.isfinite(a)):
        raise ConfigError("actions contain non-finite values; all entries must be finite")
    if max_norm is not None:
        norms = np.linalg.norm(a, axis=1)
        worst = float(norms.max())
        if worst > max_norm * (1 + 1e-9):
            raise ConfigError(
                f"action norm {worst:.6g} is not allowed; every ||a|| must be <= {max_norm}"
            )
    return a


def check_tol(tol: float) -> float:
    """The Frank–Wolfe tolerance, in (0, 1]."""
    if not 0 < tol <= 1:
        raise ConfigError(f"tol = {tol!r} is not allowed; must be in (0, 1]")
    return float(tol)


def compute_design(
    points: np.ndarray, *, tol: float = 0.01, max_iter: int = MAX_ITER, max_norm: float | None = 1.0
) -> Design:
    """G-optimal design on the span of the rows of `points` (`design_of` on checked points).

    docs/linear.md, "G-optimal design".
    """
    a = np.ascontiguousarray(check_points(points, max_norm=max_norm))
    weights, basis, g, iterations = design_of(a, check_tol(tol),
                                              min(int(max_iter), sys.maxsize))
    k = spanned(basis).shape[0]
    return Design(weights=weights, basis=basis, g=checked_g(g, k, max_iter),
                  iterations=int(iterations))


def g_optimal_design(
    points: np.ndarray, *, tol: float = 0.01, max_iter: int = MAX_ITER
) -> np.ndarray:
    """Weights π over the rows with max_a ||a||²_{V(π)^+} ≤ (1 + tol)·k ≤ 2k, k = rank.

    The bound ≤ 2k is what Hanna et al., Lemma 2 needs (Lattimore & Szepesvári, Ch. 21).
    Sets that do not span R^d are handled on their span, so V(π)^+ is the pseudo-inverse.
    """
    return compute_design(points, tol=tol, max_iter=max_iter, max_norm=None).weights


def leverages(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """h_j = x_jᵀ V(π)⁻¹ x_j with V(π) = Σ π_j x_j x_jᵀ (`design_inverse`)."""
    x = np.ascontiguousarray(x, dtype=float)
    h = np.empty(x.shape[0])
    inverse_leverages(x, design_inverse(x, np.ascontiguousarray(weights, dtype=float)), h)
    return h


def design_g(points: np.ndarray, weights: np.ndarray) -> float:
    """max_a ||a||²_{V(π)^+}: the G-criterion of a design on the span of the rows."""
    a = np.ascontiguousarray(points, dtype=float)
    x = project(a, span_basis(a))
    return float(leverages(x, weights).max())
