"""The compiled per-user passes of shuffle vector summation and P_GD's clipping (`_shuffle.c`)
against their numpy formulation."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dpbandits.privacy import _shuffle
from dpbandits.privacy.shuffle_gd import clipped_gradients_rows
from dpbandits.privacy.vector_sum import _levels, vector_sum, vector_sum_params


def user_rows(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """Rows of every scale, with zero rows and rows of exactly the bound's norm among them."""
    v = rng.standard_normal((n, d)) * rng.choice([1e-300, 1e-3, 1.0, 1e3, 1e150], (n, 1))
    v[rng.random(n) < 0.1] = 0.0
    return v


@pytest.mark.parametrize("d", [1, 3, 6, 21])
def test_compiled_passes_are_numpys(d: int) -> None:
    """`_shuffle`'s clipping, largest norm and level sums against their numpy formulation,
    bit for bit; a level sum from other draws differs (negative control)."""
    rng = np.random.default_rng(d)
    differ = 0
    for _ in range(200):
        v = user_rows(rng, int(rng.integers(1, 300)), d)
        bound = float(rng.choice([1e-3, 1.0, 7.5]))
        norms = np.sqrt(np.einsum("ij,ij->i", v, v))
        clipped = v * np.minimum(1.0, bound / np.maximum(norms, 1e-300))[:, None]
        assert clipped_gradients_rows(v, bound).tobytes() == clipped.tobytes()
        assert _shuffle.max_row_norm(clipped) == np.sqrt(
            np.einsum("ij,ij->i", clipped, clipped)).max()
        params = vector_sum_params(len(v), d, bound, 1.0, 1e-5)
        uniforms = rng.random(v.shape)
        expected = _levels(clipped, params, uniforms)[0].sum(axis=0).astype(float)
        sums = _shuffle.level_sums(clipped, bound, params.g, uniforms)
        assert sums.tobytes() == expected.tobytes()
        differ += _shuffle.level_sums(clipped, bound, params.g, rng.random(v.shape)).tobytes() \
            != expected.tobytes()
    assert differ > 150


def test_compiled_passes_keep_numpys_nan_and_inf() -> None:
    """NaN rows clip to NaN and make the largest norm NaN (no error, as numpy); infinite
    entries round to the ends; a NaN level leaves the sums to numpy."""
    v = np.array([[np.nan, 1.0], [np.inf, 0.0], [3.0, 4.0]])
    norms = np.sqrt(np.einsum("ij,ij->i", v, v))
    with np.errstate(invalid="ignore"):
        clipped = v * np.minimum(1.0, 1.0 / np.maximum(norms, 1e-300))[:, None]
    assert clipped_gradients_rows(v, 1.0).tobytes() == clipped.tobytes()
    assert math.isnan(_shuffle.max_row_norm(v))
    edges = np.array([[np.inf, -np.inf]])
    params = vector_sum_params(1, 2, 1.0, 1.0, 1e-5)
    assert _shuffle.level_sums(edges, 1.0, params.g, np.full((1, 2), 0.5)).tolist() == [
        2.0 * params.g, 0.0]
    assert _shuffle.level_sums(v, 1.0, params.g, np.full(v.shape, 0.5)) is None


@pytest.mark.parametrize("call", [
    lambda: _shuffle.clip_rows(np.ones((3, 2))[:, ::-1], 1.0),
    lambda: _shuffle.max_row_norm(np.ones(3)),
    lambda: _shuffle.level_sums(np.ones((3, 2)), 1.0, 4, np.ones((2, 2))),
    lambda: _shuffle.level_sums(np.ones((3, 2), dtype=np.float32), 1.0, 4, np.ones((3, 2))),
])
def test_compiled_passes_refuse_other_arrays(call) -> None:  # noqa: ANN001 - a test case
    with pytest.raises(ValueError, match="not allowed"):
        call()


def misaligned(a: np.ndarray) -> np.ndarray:
    """A C-ordered float64 copy of `a` one byte off alignment."""
    raw = np.zeros(a.nbytes + 1, dtype=np.uint8)
    out = raw[1:].view(np.float64).reshape(a.shape)
    out[...] = a
    assert not out.flags.aligned and out.flags.c_contiguous
    return out


def test_every_layout_releases_the_same_sum() -> None:
    """Misaligned, Fortran-ordered and strided vectors take numpy's calls and release what the
    compiled passes release from a C-ordered copy, from the same generator state; an
    over-bound vector raises the norm error in every layout; a hand-made integral float g
    works as the integer does."""
    rng = np.random.default_rng(9)
    v = clipped_gradients_rows(rng.standard_normal((40, 3)), 1.0)
    params = vector_sum_params(40, 3, 1.0, 1.0, 1e-5)
    expected = vector_sum(v, params, np.random.default_rng(1))
    for layout in (misaligned(v), np.asfortranarray(v), np.repeat(v, 2, axis=1)[:, ::2]):
        assert vector_sum(layout, params, np.random.default_rng(1)).tobytes() == (
            expected.tobytes())
        assert clipped_gradients_rows(layout, 0.5).tobytes() == (
            layout * np.minimum(1.0, 0.5 / np.maximum(np.sqrt(np.einsum(
                "ij,ij->i", layout, layout)), 1e-300))[:, None]).tobytes()
        over = layout * 3.0
        with pytest.raises(ValueError, match="norm .* > bound"):
            vector_sum(over, params, np.random.default_rng(1))
    as_float = dataclasses.replace(params, g=float(params.g))
    assert vector_sum(v, as_float, np.random.default_rng(1)).tobytes() == expected.tobytes()
