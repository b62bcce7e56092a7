"""G-optimal experimental design by Frank–Wolfe (Kiefer–Wolfowitz) on the span of an action set."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from dpbandits import _design, small_linalg
from dpbandits.errors import ConfigError

RANK_TOL = 1e-10
MAX_ITER = 10_000  # Frank–Wolfe steps at most


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


def span_basis(points: np.ndarray) -> np.ndarray:
    """Orthonormal rows U (k × d) of the row span by thin SVD, rank tolerance 1e-10·max(1, s₁)."""
    _, s, vt = small_linalg.svd_thin(points)
    if s.size == 0:
        return np.zeros((0, points.shape[1]))
    k = int(np.sum(s > RANK_TOL * max(1.0, float(s[0]))))
    return vt[:k]


def leverages(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """h_j = x_jᵀ V(π)^{-1} x_j with V(π) = Σ π_j x_j x_jᵀ, by Cholesky."""
    v = (x * weights[:, None]).T @ x
    chol = small_linalg.cholesky(v)
    z = small_linalg.solve(chol, x.T)
    return small_linalg.einsum("ij,ij->j", z, z)


def greedy_spanning_set(x: np.ndarray) -> np.ndarray:
    """k rows picked by largest residual norm with Gram–Schmidt deflation.

    The greedy start of docs/linear.md, "G-optimal design".
    """
    residual = np.array(x, dtype=float, copy=True)
    k = x.shape[1]
    chosen: list[int] = []
    for _ in range(k):
        norms = small_linalg.einsum("ij,ij->i", residual, residual)
        norms[chosen] = -1.0
        j = int(norms.argmax())
        chosen.append(j)
        u = residual[j] / np.sqrt(norms[j])
        residual -= (residual @ u)[:, None] * u
    return np.array(chosen, dtype=int)


def frank_wolfe(
    x: np.ndarray, *, tol: float = 0.01, max_iter: int = MAX_ITER
) -> tuple[np.ndarray, float, int]:
    """Fedorov–Wynn / Frank–Wolfe on log det V(π) with exact line search.

    Lattimore & Szepesvári, Bandit Algorithms, Ch. 21 (Kiefer–Wolfowitz).
    V(π)^{-1} is carried by Sherman–Morrison rank-one updates; the final g is recomputed from a
    Cholesky factorisation. The numpy formulation of what `compute_design` runs compiled.
    """
    n, k = x.shape
    weights = np.zeros(n)
    start = greedy_spanning_set(x)
    weights[start] = 1.0 / k
    xs = x[start]
    v_inv = small_linalg.solve(xs.T @ xs / k, np.eye(k))
    it = 0
    while True:
        h = small_linalg.einsum("ij,ij->i", x @ v_inv, x)
        j = int(h.argmax())
        g = float(h[j])
        if g <= (1.0 + tol) * k or it >= max_iter:
            break
        step = (g / k - 1.0) / (g - 1.0)
        weights *= 1.0 - step
        weights[j] += step
        # ((1 − λ)V + λ x xᵀ)^{-1} by Sherman–Morrison.
        u = v_inv @ x[j]
        v_inv = (v_inv - u[:, None] * u * (step / (1.0 - step + step * g))) / (1.0 - step)
        it += 1
    return weights, checked_g(float(leverages(x, weights).max()), k, max_iter), it


def checked_g(g: float, k: int, max_iter: int) -> float:
    """g, once it is known to be within the bound 2k (else Frank–Wolfe failed)."""
    if g > 2 * k * (1 + 1e-9):
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


def compute_design(
    points: np.ndarray, *, tol: float = 0.01, max_iter: int = MAX_ITER, max_norm: float | None = 1.0
) -> Design:
    """G-optimal design on the span of the rows of `points`: projection, then Frank–Wolfe.

    docs/linear.md, "G-optimal design". Runs compiled (`_design.design`, on numpy's own
    kernels, the bits of `numpy_design`: tests/test_design.py); where a decomposition there is
    not finite, `numpy_design` runs, whose numpy calls raise or give their result.
    """
    a = np.ascontiguousarray(check_points(points, max_norm=max_norm))
    if not 0 < tol <= 1:
        raise ConfigError(f"tol = {tol!r} is not allowed; must be in (0, 1]")
    found = _design.design(a, float(tol), min(int(max_iter), sys.maxsize), RANK_TOL)
    if found is None:
        return numpy_design(a, tol=tol, max_iter=max_iter)
    weights, basis, g, iterations = found
    k = spanned(basis).shape[0]
    return Design(weights=weights, basis=basis, g=checked_g(g, k, max_iter),
                  iterations=iterations)


def numpy_design(a: np.ndarray, *, tol: float = 0.01, max_iter: int = MAX_ITER) -> Design:
    """`compute_design` on checked points, in numpy: `span_basis`, then `frank_wolfe`."""
    basis = spanned(span_basis(a))
    weights, g, iterations = frank_wolfe(a @ basis.T, tol=tol, max_iter=max_iter)
    return Design(weights=weights, basis=basis, g=g, iterations=iterations)


def g_optimal_design(
    points: np.ndarray, *, tol: float = 0.01, max_iter: int = MAX_ITER
) -> np.ndarray:
    """Weights π over the rows with max_a ||a||²_{V(π)^+} ≤ (1 + tol)·k ≤ 2k, k = rank.

    The bound ≤ 2k is what Hanna et al., Lemma 2 needs (Lattimore & Szepesvári, Ch. 21).
    Sets that do not span R^d are handled on their span, so V(π)^+ is the pseudo-inverse.
    """
    return compute_design(points, tol=tol, max_iter=max_iter, max_norm=None).weights


def design_g(points: np.ndarray, weights: np.ndarray) -> float:
    """max_a ||a||²_{V(π)^+}: the G-criterion of a design on the span of the rows."""
    a = np.asarray(points, dtype=float)
    x = a @ span_basis(a).T
    return float(leverages(x, np.asarray(weights, dtype=float)).max())
