"""G-optimal experimental design by Frank–Wolfe (Kiefer–Wolfowitz) on the span of an action set."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpbandits import _design, small_linalg
from dpbandits.errors import ConfigError

RANK_TOL = 1e-10


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


def frank_wolfe(
    x: np.ndarray, *, tol: float = 0.01, max_iter: int = 10_000
) -> tuple[np.ndarray, float, int]:
    """Fedorov–Wynn / Frank–Wolfe on log det V(π) with exact line search, for x of full
    column rank k.

    Lattimore & Szepesvári, Bandit Algorithms, Ch. 21 (Kiefer–Wolfowitz). The start is
    uniform on k rows picked greedily by largest residual norm with Gram–Schmidt deflation
    (docs/linear.md, "G-optimal design"); each step moves λ = (g/k − 1)/(g − 1) of the weight
    to the row of largest leverage g, and V(π)⁻¹ follows by Sherman–Morrison,
    ((1 − λ)V + λxxᵀ)⁻¹ = (V⁻¹ − uuᵀλ/(1 − λ + λg))/(1 − λ), u = V⁻¹x. The loop runs compiled
    (`_design.frank_wolfe`, numpy's own kernels: tests/test_design.py checks its bits against
    the numpy formulation); the final g is recomputed from a Cholesky factorisation.
    """
    x = np.ascontiguousarray(x, dtype=float)
    k = x.shape[1]
    weights, it = _design.frank_wolfe(x, float(tol), int(max_iter))
    g = float(leverages(x, weights).max())
    if g > 2 * k * (1 + 1e-9):
        raise RuntimeError(f"Frank–Wolfe did not reach g <= 2k = {2 * k} in {max_iter} steps")
    return weights, g, it


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
    points: np.ndarray, *, tol: float = 0.01, max_iter: int = 10_000, max_norm: float | None = 1.0
) -> Design:
    """G-optimal design on the span of the rows of `points`: projection, then Frank–Wolfe.

    docs/linear.md, "G-optimal design".
    """
    a = check_points(points, max_norm=max_norm)
    if not 0 < tol <= 1:
        raise ConfigError(f"tol = {tol!r} is not allowed; must be in (0, 1]")
    basis = span_basis(a)
    k = basis.shape[0]
    if k == 0:
        raise ConfigError("actions are all zero; the action set must span at least one direction")
    x = a @ basis.T
    weights, g, iterations = frank_wolfe(x, tol=tol, max_iter=max_iter)
    return Design(weights=weights, basis=basis, g=g, iterations=iterations)


def g_optimal_design(
    points: np.ndarray, *, tol: float = 0.01, max_iter: int = 10_000
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
