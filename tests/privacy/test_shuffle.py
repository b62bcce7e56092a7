"""The per-user passes of shuffle vector summation: the randomiser's rounded levels and the
norm check (`privacy/vector_sum.py`)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpbandits.privacy.vector_sum import (
    level_sums,
    max_row_norm,
    rounded_level,
    vector_sum,
    vector_sum_params,
)


def user_rows(rng: np.random.Generator, n: int, d: int, bound: float) -> np.ndarray:
    """Rows of every scale up to the bound, zero rows and rows of exactly the bound's norm."""
    v = rng.standard_normal((n, d)) * rng.choice([1e-300, 1e-3, 1.0, 1e3], (n, 1))
    v[rng.random(n) < 0.1] = 0.0
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return np.where(norms > bound, v * (bound / np.maximum(norms, 1e-300)), v)


def dense_levels(v: np.ndarray, bound: float, g: int, uniforms: np.ndarray) -> np.ndarray:
    """ȳ = ⌊w⌋ + [U < w − ⌊w⌋], w = clip((v + L)·g/L, 0, 2g), summed over the users."""
    scaled = np.clip((v + bound) * (g / bound), 0.0, 2.0 * g)
    base = np.floor(scaled)
    return (base + (uniforms < scaled - base)).sum(axis=0)


@pytest.mark.parametrize("d", [1, 3, 6, 21])
def test_level_sums_are_the_randomisers_formula(d: int) -> None:
    """The level sums against the dense formula from the same uniforms; other uniforms give
    other sums (negative control)."""
    rng = np.random.default_rng(d)
    differ = 0
    for _ in range(200):
        bound = float(rng.choice([1e-3, 1.0, 7.5]))
        v = user_rows(rng, int(rng.integers(1, 300)), d, bound)
        g = vector_sum_params(len(v), d, bound, 1.0, 1e-5).g
        uniforms = rng.random(v.shape)
        sums = level_sums(v, bound, g, uniforms)
        assert sums.tolist() == dense_levels(v, bound, g, uniforms).tolist()
        differ += level_sums(v, bound, g, rng.random(v.shape)).tolist() != sums.tolist()
    assert differ > 150


def test_vector_sum_is_the_analyzers_formula() -> None:
    """ŝ = (L/g)(Σ_u ȳ_u + Binomial(nb, p) − pnb) − nL from `rng.random(v.shape)` and then the
    blanket draws: the values and the generator's state after them."""
    rng = np.random.default_rng(4)
    for n, d in ((1, 1), (7, 3), (250, 6)):
        v = user_rows(rng, n, d, 2.0)
        params = vector_sum_params(n, d, 2.0, 1.0, 1e-5)
        mine, numpys = np.random.default_rng(n), np.random.default_rng(n)
        got = vector_sum(v, params, mine)
        levels = dense_levels(v, 2.0, params.g, numpys.random(v.shape))
        trials = params.n * params.b
        blanket = numpys.binomial(trials, params.p, size=d) - params.p * trials
        expected = (2.0 / params.g) * (levels + blanket) - n * 2.0
        assert got.tolist() == expected.tolist()
        assert mine.bit_generator.state == numpys.bit_generator.state


def test_levels_round_to_the_ends_of_the_grid() -> None:
    """Values beyond ±L round to 2g and 0; a value on a level keeps it whatever the draw."""
    assert rounded_level(np.inf, 1.0, 8, 0.5) == 16 and rounded_level(-np.inf, 1.0, 8, 0.5) == 0
    assert rounded_level(2.0, 1.0, 8, 0.0) == 16 and rounded_level(-3.0, 1.0, 8, 0.99) == 0
    assert rounded_level(0.25, 1.0, 8, 0.0) == 10 and rounded_level(0.25, 1.0, 8, 0.999) == 10
    assert rounded_level(0.3, 1.0, 8, 0.39) == 11 and rounded_level(0.3, 1.0, 8, 0.41) == 10


def test_largest_norm() -> None:
    rng = np.random.default_rng(1)
    v = rng.standard_normal((50, 4))
    assert max_row_norm(v) == pytest.approx(np.linalg.norm(v, axis=1).max(), rel=1e-15)
    assert max_row_norm(np.zeros((0, 3))) == -np.inf


def misaligned(a: np.ndarray) -> np.ndarray:
    """A C-ordered float64 copy of `a` one byte off alignment."""
    raw = np.zeros(a.nbytes + 1, dtype=np.uint8)
    out = raw[1:].view(np.float64).reshape(a.shape)
    out[...] = a
    assert not out.flags.aligned and out.flags.c_contiguous
    return out


def test_every_layout_releases_the_same_sum() -> None:
    """Misaligned, Fortran-ordered and strided vectors release what a C-ordered copy releases
    from the same generator state; an over-bound vector raises the norm error in every layout;
    a hand-made integral float g works as the integer does."""
    rng = np.random.default_rng(9)
    v = user_rows(rng, 40, 3, 1.0)
    params = vector_sum_params(40, 3, 1.0, 1.0, 1e-5)
    expected = vector_sum(v, params, np.random.default_rng(1))
    for layout in (misaligned(v), np.asfortranarray(v), np.repeat(v, 2, axis=1)[:, ::2]):
        assert vector_sum(layout, params, np.random.default_rng(1)).tolist() == (
            expected.tolist())
        over = layout * 3.0
        with pytest.raises(ValueError, match="norm .* > bound"):
            vector_sum(over, params, np.random.default_rng(1))
    as_float = dataclasses.replace(params, g=float(params.g))
    assert vector_sum(v, as_float, np.random.default_rng(1)).tolist() == expected.tolist()


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_vectors_are_refused(bad: float) -> None:
    v = np.array([[0.1, bad], [0.2, 0.3]])
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    with pytest.raises(ValueError, match="non-finite"):
        vector_sum(v, vector_sum_params(2, 2, 1.0, 1.0, 1e-5), rng)
    assert rng.bit_generator.state == before
