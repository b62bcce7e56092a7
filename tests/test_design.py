"""G-optimal design (docs/linear.md, "G-optimal design")."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbandits.design import (
    compute_design,
    design_g,
    draw_index,
    g_optimal_design,
    greedy_spanning_set,
    leverages,
    span_basis,
)
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



def random_points(rng: np.random.Generator) -> np.ndarray:
    """Up to 60 × 8 points of any rank, scales 1e-3 to 1e3."""
    n, d = int(rng.integers(1, 60)), int(rng.integers(1, 9))
    rank = int(rng.integers(1, min(n, d) + 1))
    mix = rng.standard_normal((n, rank)) @ rng.standard_normal((rank, d))
    return mix * rng.choice([1e-3, 1.0, 1e3])


def test_span_basis_has_the_rank_and_span_of_numpys_svd() -> None:
    """The rank is numpy's SVD count above 1e-10·max(1, s₁) and the basis spans the same rows,
    on random sets of any rank and scale (collinear, n < d, n = k included)."""
    rng = np.random.default_rng(7)
    for _ in range(400):
        points = random_points(rng)
        s = np.linalg.svd(points, compute_uv=False)
        basis = span_basis(points)
        assert basis.shape == (int(np.sum(s > 1e-10 * max(1.0, s[0]))), points.shape[1])
        np.testing.assert_allclose(basis @ basis.T, np.eye(basis.shape[0]), atol=1e-12)
        scale = np.abs(points).max()
        np.testing.assert_allclose(points @ basis.T @ basis, points, atol=1e-9 * scale)


def test_design_on_random_sets_of_any_rank() -> None:
    """The guarantee g ≤ (1 + tol)k, or the step cap reached (then g > 2k raises)."""
    rng = np.random.default_rng(8)
    capped = 0
    for _ in range(300):
        points = random_points(rng)
        tol, max_iter = float(rng.choice([1e-3, 0.01, 0.1])), int(rng.choice([0, 3, 10_000]))
        try:
            design = compute_design(points, tol=tol, max_iter=max_iter, max_norm=None)
        except RuntimeError as err:
            assert "did not reach" in str(err) and max_iter < 10_000
            capped += 1
            continue
        k = design.rank
        assert np.all(design.weights >= 0) and abs(design.weights.sum() - 1.0) < 1e-12
        assert design.g <= 2 * k * (1 + 1e-9)
        assert design.iterations <= max_iter
        if design.iterations < max_iter:
            assert design.g <= (1 + tol) * k * (1 + 1e-9)
        x = points @ design.basis.T
        assert design.g == pytest.approx(leverages(x, design.weights).max(), rel=1e-9)
    assert capped > 0


def test_a_step_cap_beyond_the_machine_word_is_no_cap() -> None:
    points = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    assert compute_design(points, max_iter=2**70).g <= 2 * (1 + 0.01)


def test_all_zero_points_are_refused() -> None:
    with pytest.raises(ConfigError, match="all zero"):
        compute_design(np.zeros((3, 2)), max_norm=None)


def numpy_draw(weights: np.ndarray, rng: np.random.Generator) -> int:
    """`rng.choice` of the clipped, normalised weights."""
    clipped = np.clip(weights, 0.0, None)
    return int(rng.choice(weights.size, p=clipped / clipped.sum()))


def test_draw_index_is_numpys_choice() -> None:
    """The index and the generator's state after it against `rng.choice` from the same state,
    on designs of random sets; a state one draw ahead picks another index in many rounds."""
    rng = np.random.default_rng(11)
    differ = 0
    for seed in range(1500):
        weights = compute_design(random_points(rng), max_norm=None).weights
        mine, numpys = np.random.default_rng(seed), np.random.default_rng(seed)
        index = draw_index(weights, mine)
        assert index == numpy_draw(weights, numpys)
        assert mine.bit_generator.state == numpys.bit_generator.state
        numpys.random()
        differ += numpy_draw(weights, numpys) != index
    assert differ > 300


def test_greedy_start_takes_the_first_of_norms_equal_to_rounding() -> None:
    """Unit-norm rows tie: the start begins with row 0 in any rotation of the set; a row longer
    by more than rounding is taken first; deflation then picks the most orthogonal row."""
    rng = np.random.default_rng(4)
    for _ in range(100):
        points = sphere(rng, 6, 3)
        rotation = np.linalg.qr(rng.standard_normal((3, 3)))[0]
        assert greedy_spanning_set(np.ascontiguousarray(points @ rotation))[0] == 0
        longer = points.copy()
        longer[4] *= 1.0 + 1e-9
        assert greedy_spanning_set(longer)[0] == 4
    square = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
    assert greedy_spanning_set(square).tolist() == [0, 2]
