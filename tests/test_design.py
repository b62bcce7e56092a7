"""G-optimal design (docs/linear.md, "G-optimal design")."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbandits import _design
from dpbandits.design import (
    Design,
    compute_design,
    design_g,
    frank_wolfe,
    g_optimal_design,
    leverages,
    numpy_design,
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


def same_design(a: Design, b: Design) -> bool:
    return (a.weights.tobytes() == b.weights.tobytes() and a.basis.tobytes() == b.basis.tobytes()
            and np.float64(a.g).tobytes() == np.float64(b.g).tobytes()
            and a.iterations == b.iterations)


def test_compiled_design_is_the_numpy_formulations_bits() -> None:
    """Weights, basis, g and steps bit for bit on random sets of any rank (k = 1 and n = k
    included) with step caps 0, 3 and 10 000; a one-ulp change of the points changes the bits
    compared (negative control)."""
    rng = np.random.default_rng(7)
    steps = differ = 0
    for _ in range(400):
        points = random_points(rng)
        tol, max_iter = float(rng.choice([1e-3, 0.01, 0.1])), int(rng.choice([0, 3, 10_000]))
        kwargs = {"tol": tol, "max_iter": max_iter, "max_norm": None}
        try:
            expected = numpy_design(points, tol=tol, max_iter=max_iter)
        except RuntimeError:  # g above 2k after a step cap: both fail alike
            with pytest.raises(RuntimeError, match="did not reach"):
                compute_design(points, **kwargs)
            continue
        assert same_design(compute_design(points, **kwargs), expected)
        steps += expected.iterations
        nudged = compute_design(points * (1.0 + 2.0**-52), **kwargs)
        differ += not same_design(nudged, expected)
    assert steps > 1000 and differ > 100


def test_non_finite_decompositions_go_to_numpy() -> None:
    """Points so large that the start's Gram matrix overflows: the compiled design says None
    and numpy's calls decide (here they return NaN weights, as before); zero points are
    refused either way."""
    huge = np.array([[1e160, 0.0], [0.0, 1e160], [1e160, 1e160]])
    assert _design.design(huge, 0.01, 10, 1e-10) is None
    with np.errstate(all="ignore"):
        assert same_design(compute_design(huge, max_iter=10, max_norm=None),
                           numpy_design(huge, max_iter=10))
    with pytest.raises(ConfigError, match="all zero"):
        compute_design(np.zeros((3, 2)), max_norm=None)
    with pytest.raises(ConfigError, match="all zero"):
        numpy_design(np.zeros((3, 2)))


def test_a_step_cap_beyond_the_machine_word_is_no_cap() -> None:
    points = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    assert same_design(compute_design(points, max_iter=2**70), numpy_design(points))


@pytest.mark.parametrize("tol", [math.nan, -0.5])
def test_a_step_from_g_equal_to_one_raises_as_python_does(tol: float) -> None:
    """With a tolerance compute_design refuses, g = 1 reaches the line search: Python's float
    division raises ZeroDivisionError, and so does the compiled design."""
    x = np.array([[1.0], [0.5]])
    with pytest.raises(ZeroDivisionError):
        frank_wolfe(x, tol=tol, max_iter=5)
    with pytest.raises(ZeroDivisionError):
        _design.design(x, tol, 5, 1e-10)


@pytest.mark.parametrize("points", [np.ones((3, 2), dtype=np.int64),
                                    np.ones((4, 3))[:, ::2], np.ones(3),
                                    np.ones((3, 0))])
def test_compiled_design_refuses_other_arrays(points: np.ndarray) -> None:
    with pytest.raises(ValueError, match="points are not allowed"):
        _design.design(points, 0.01, 10, 1e-10)


def numpy_draw(points: np.ndarray, tol: float, rng: np.random.Generator) -> int:
    """Shuffle-GLM's draw in numpy: `rng.choice` of the clipped, normalised design weights."""
    weights = np.clip(g_optimal_design(points, tol=tol), 0.0, None)
    return int(rng.choice(points.shape[0], p=weights / weights.sum()))


def test_draw_is_numpys_choice_from_the_design() -> None:
    """The index and the generator's state after it, on random sets of any rank, against
    `rng.choice` from the same state; a state one draw ahead picks another index in many
    rounds (negative control)."""
    rng = np.random.default_rng(11)
    differ = 0
    for seed in range(1500):
        points = random_points(rng)
        tol = float(rng.choice([1e-3, 0.01, 0.1]))
        mine, numpys = np.random.default_rng(seed), np.random.default_rng(seed)
        try:
            expected = numpy_draw(points, tol, numpys)
        except RuntimeError:  # g above 2k: the compiled draw leaves it to numpy
            assert _design.draw(points, tol, 10_000, 1e-10, mine.bit_generator.capsule) is None
            continue
        index = _design.draw(points, tol, 10_000, 1e-10, mine.bit_generator.capsule)
        assert index == expected
        assert mine.bit_generator.state == numpys.bit_generator.state
        numpys.random()
        differ += numpy_draw(points, tol, numpys) != index
    assert differ > 300


@pytest.mark.parametrize("points", [np.zeros((3, 2)), np.array([[1.0, np.nan], [0.0, 1.0]]),
                                    np.array([[np.inf, 0.0], [0.0, 1.0]])])
def test_draw_leaves_refused_sets_to_numpy(points: np.ndarray) -> None:
    """Sets `compute_design` refuses (all zero, not finite): None, and nothing drawn."""
    rng = np.random.default_rng(3)
    before = rng.bit_generator.state
    assert _design.draw(points, 0.01, 10_000, 1e-10, rng.bit_generator.capsule) is None
    assert rng.bit_generator.state == before
    with pytest.raises(ConfigError):
        numpy_draw(points, 0.01, rng)


@pytest.mark.parametrize("tol", [0.0, 1.5, math.nan])
def test_draw_leaves_a_refused_tolerance_to_numpy(tol: float) -> None:
    rng = np.random.default_rng(3)
    assert _design.draw(np.eye(2), tol, 10_000, 1e-10, rng.bit_generator.capsule) is None
    with pytest.raises(ConfigError, match="tol"):
        numpy_draw(np.eye(2), tol, rng)


def test_draw_refuses_other_arguments() -> None:
    rng = np.random.default_rng(3)
    with pytest.raises(ValueError, match="points are not allowed"):
        _design.draw(np.ones((4, 3))[:, ::2], 0.01, 10, 1e-10, rng.bit_generator.capsule)
    with pytest.raises(TypeError, match="capsule is not allowed"):
        _design.draw(np.eye(2), 0.01, 10, 1e-10, rng)
