"""G-optimal design (docs/linear.md, "G-optimal design")."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbandits import _design, small_linalg
from dpbandits.design import compute_design, design_g, g_optimal_design, leverages, span_basis
from dpbandits.errors import ConfigError


def sphere(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    v = rng.standard_normal((n, d))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def check_design(points: np.ndarray, tol: float = 0.01) -> None:
    design = compute_design(points, tol=tol, max_norm=None)
    w = design.weights
    k = design.rank
    assert k == np.linalg.matrix_rank(points, tol=1e-8)
    assert np.all(w >= 0)
    assert abs(w.sum() - 1.0) < 1e-12
    x = points @ design.basis.T
    h = leverages(x, w)
    # Σ π(a)||x_a||²_{V(π)^-1} = k for every invertible design.
    assert abs(float(w @ h) - k) < 1e-9
    assert k - 1e-9 <= h.max() <= (1 + tol) * k + 1e-9 <= 2 * k
    assert np.array_equal(design.support, np.flatnonzero(w > 0))
    # Same guarantee through the public weights-only entry point.
    assert design_g(points, g_optimal_design(points, tol=tol)) <= 2 * k + 1e-9


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 50),
    d=st.integers(1, 8),
    rank=st.integers(1, 8),
    scale=st.floats(0.05, 1.0),
)
def test_guarantee_on_random_sets(seed: int, n: int, d: int, rank: int, scale: float) -> None:
    """max ||a||²_{V(π)^-1} ≤ 2k on random sets, incl. sets spanning a subspace of R^d."""
    rng = np.random.default_rng(seed)
    r = min(rank, d)
    mix = rng.standard_normal((r, d))
    points = rng.standard_normal((n, r)) @ mix
    points *= scale * rng.uniform(0.1, 1.0, (n, 1)) / np.linalg.norm(points, axis=1, keepdims=True)
    check_design(points)


@pytest.mark.parametrize("n,d", [(5, 2), (50, 2), (5, 4), (50, 4), (50, 8), (10, 2)])
def test_random_sphere_sets(n: int, d: int) -> None:
    check_design(sphere(np.random.default_rng(n * 100 + d), n, d))


def test_degenerate_sets() -> None:
    rng = np.random.default_rng(3)
    collinear = np.outer(rng.uniform(-1, 1, 7), [0.6, 0.0, 0.8])
    check_design(collinear)
    check_design(np.array([[0.3, -0.4, 0.0]]))
    plane = rng.standard_normal((9, 2)) @ np.linalg.qr(rng.standard_normal((5, 2)))[0].T
    plane /= np.linalg.norm(plane, axis=1, keepdims=True)
    design = compute_design(plane)
    assert design.rank == 2
    check_design(plane)


def test_collinear_design_is_the_longest_point() -> None:
    points = np.outer([0.2, -0.9, 0.5], [1.0, 0.0])
    w = g_optimal_design(points)
    assert np.array_equal(w, [0.0, 1.0, 0.0])


def test_small_support_for_paper_instance() -> None:
    rng = np.random.default_rng(11)
    for _ in range(50):
        design = compute_design(sphere(rng, 10, 2))
        assert 2 <= design.support.size <= 6


def test_log_det_close_to_kiefer_wolfowitz_optimum() -> None:
    """FW's log det is within 1e-2 of a long multiplicative-weights run."""
    rng = np.random.default_rng(5)
    points = sphere(rng, 20, 3)
    w = g_optimal_design(points, tol=0.01)
    mw = np.full(20, 1 / 20)
    for _ in range(2000):
        mw *= leverages(points, mw) / 3.0
        mw /= mw.sum()
    logdet = np.linalg.slogdet((points * w[:, None]).T @ points)[1]
    best = np.linalg.slogdet((points * mw[:, None]).T @ points)[1]
    assert best - 1e-2 <= logdet <= best + 1e-9


def test_span_basis_is_orthonormal_and_exact() -> None:
    rng = np.random.default_rng(2)
    points = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 4))
    u = span_basis(points)
    assert u.shape == (2, 4)
    np.testing.assert_allclose(u @ u.T, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(points @ u.T @ u, points, atol=1e-12)


@pytest.mark.parametrize(
    "points",
    [
        np.array([[1.5, 0.0], [0.0, 1.0]]),
        np.zeros((3, 2)),
        np.array([[np.nan, 0.0]]),
        np.zeros((0, 2)),
    ],
)
def test_bad_action_sets_raise_config_error(points: np.ndarray) -> None:
    with pytest.raises(ConfigError) as err:
        compute_design(points)
    assert "\n" not in str(err.value)



def numpy_frank_wolfe(x: np.ndarray, tol: float, max_iter: int, *, reordered: bool = False
                      ) -> tuple[np.ndarray, int]:
    """`_design.frank_wolfe` written in numpy: (weights, steps). `reordered` multiplies uuᵀ by
    the step factor in another order (the same number in exact arithmetic)."""
    n, k = x.shape
    residual, start = x.copy(), []
    for _ in range(k):  # the greedy spanning start
        norms = small_linalg.einsum("ij,ij->i", residual, residual)
        norms[start] = -1.0
        j = int(norms.argmax())
        start.append(j)
        u = residual[j] / np.sqrt(norms[j])
        residual -= (residual @ u)[:, None] * u
    weights = np.zeros(n)
    weights[start] = 1.0 / k
    xs = x[start]
    v_inv, it = small_linalg.solve(xs.T @ xs / k, np.eye(k)), 0
    while True:
        h = small_linalg.einsum("ij,ij->i", x @ v_inv, x)
        j = int(h.argmax())
        g = float(h[j])
        if g <= (1.0 + tol) * k or it >= max_iter:
            return weights, it
        step = (g / k - 1.0) / (g - 1.0)
        weights *= 1.0 - step
        weights[j] += step
        u = v_inv @ x[j]
        c = step / (1.0 - step + step * g)
        outer = u[:, None] * (u * c) if reordered else u[:, None] * u * c
        v_inv = (v_inv - outer) / (1.0 - step)
        it += 1


def test_compiled_frank_wolfe_is_the_numpy_formulations_bits() -> None:
    """Weights and steps bit for bit on random sets of every shape up to 60 × 7 (k = 1
    included), scales 1e-3 to 1e3, step caps 0, 3 and 10 000; the comparison tells two orders
    of the same products apart (negative control)."""
    rng = np.random.default_rng(7)
    steps = differ = 0
    for _ in range(400):
        n = int(rng.integers(1, 60))
        x = rng.standard_normal((n, min(n, int(rng.integers(1, 8))))) * rng.choice(
            [1e-3, 1.0, 1e3])
        tol, max_iter = float(rng.choice([1e-3, 0.01, 0.1])), int(rng.choice([0, 3, 10_000]))
        weights, it = numpy_frank_wolfe(x, tol, max_iter)
        compiled, compiled_it = _design.frank_wolfe(x, tol, max_iter)
        assert compiled_it == it and compiled.tobytes() == weights.tobytes()
        steps += it
        differ += numpy_frank_wolfe(x, tol, max_iter, reordered=True)[0].tobytes() != (
            weights.tobytes())
    assert steps > 1000 and differ > 0


def test_compiled_frank_wolfe_follows_nan_and_singular_starts_as_numpy() -> None:
    """A NaN leverage is numpy's argmax and never stops the loop before max_iter; a singular
    start raises numpy.linalg's error."""
    x = np.array([[1.0, 0.0], [0.0, 1.0], [np.nan, 1.0]])
    weights, it = numpy_frank_wolfe(x, 0.01, 5)
    compiled, compiled_it = _design.frank_wolfe(x, 0.01, 5)
    assert compiled_it == it == 5 and compiled.tobytes() == weights.tobytes()
    with pytest.raises(np.linalg.LinAlgError), np.errstate(invalid="ignore"):
        numpy_frank_wolfe(np.zeros((3, 2)), 0.01, 5)
    with pytest.raises(np.linalg.LinAlgError):
        _design.frank_wolfe(np.zeros((3, 2)), 0.01, 5)


@pytest.mark.parametrize("x", [np.ones((3, 2), dtype=np.int64), np.ones((2, 3)),
                               np.ones((3, 2), order="F"), np.ones(3), np.ones((3, 0))])
def test_compiled_frank_wolfe_refuses_other_arrays(x: np.ndarray) -> None:
    with pytest.raises(ValueError, match="x is not allowed"):
        _design.frank_wolfe(x, 0.01, 10)
