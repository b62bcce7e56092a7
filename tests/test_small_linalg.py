"""small_linalg returns numpy.linalg's bits, and numpy.linalg's errors, without its wrapper."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pytest

from dpbandits import small_linalg
from dpbandits.glm import logdet, quad_forms


def _same(got: object, want: object) -> bool:
    got_t = got if isinstance(got, tuple) else (got,)
    want_t = want if isinstance(want, tuple) else (want,)
    return len(got_t) == len(want_t) and all(
        np.asarray(g).dtype == np.asarray(w).dtype and np.asarray(g).tobytes()
        == np.asarray(w).tobytes() for g, w in zip(got_t, want_t, strict=True))


@pytest.mark.parametrize("d", [1, 2, 3, 5, 9])
def test_every_helper_returns_numpys_bits(d: int) -> None:
    g = np.random.default_rng(100 + d)
    for _ in range(20):
        b = g.normal(size=(d, d))
        spd = b @ b.T + 0.1 * np.eye(d)
        general = g.normal(size=(d, d)) + d * np.eye(d)
        x = g.normal(size=(2 * d + 3, d))
        rhs = g.normal(size=d)
        assert _same(small_linalg.eigh(spd), tuple(np.linalg.eigh(spd)))
        assert _same(small_linalg.eigvalsh(spd), np.linalg.eigvalsh(spd))
        assert _same(small_linalg.solve(general, rhs), np.linalg.solve(general, rhs))
        assert _same(small_linalg.solve(general, x.T), np.linalg.solve(general, x.T))
        assert _same(small_linalg.cholesky(spd), np.linalg.cholesky(spd))
        assert _same(small_linalg.svd_thin(x), tuple(np.linalg.svd(x, full_matrices=False)))
        assert _same(small_linalg.svd_thin(x.T), tuple(np.linalg.svd(x.T, full_matrices=False)))
        sign, value = np.linalg.slogdet(general)
        assert small_linalg.slogdet(general) == (float(sign), float(value))
        assert _same(small_linalg.einsum("ij,ij->i", x, x), np.einsum("ij,ij->i", x, x))
        assert logdet(spd) == float(np.linalg.slogdet(spd)[1])
        assert _same(quad_forms(x, spd), np.einsum("ij,ij->i", x @ spd, x))


def test_the_lower_triangle_is_what_counts() -> None:
    a = np.array([[2.0, 100.0], [0.5, 3.0]])  # the upper entry is ignored, as by numpy
    assert _same(small_linalg.eigh(a), tuple(np.linalg.eigh(a)))
    assert _same(small_linalg.eigvalsh(a), np.linalg.eigvalsh(a))
    assert small_linalg.eigvalsh(a).tobytes() != np.linalg.eigvalsh(a, UPLO="U").tobytes()


@pytest.mark.parametrize(("call", "matrix"), [
    (lambda m: small_linalg.solve(m, np.ones(3)), np.zeros((3, 3))),
    (lambda m: small_linalg.solve(m, np.ones((3, 2))), np.zeros((3, 3))),
    (small_linalg.cholesky, -np.eye(3)),
    (small_linalg.eigh, np.full((3, 3), np.nan)),
    (small_linalg.eigvalsh, np.full((3, 3), np.nan)),
    (small_linalg.svd_thin, np.full((4, 3), np.nan)),
])
def test_failures_raise_numpys_error_and_nothing_else(
        call: Callable[[np.ndarray], object], matrix: np.ndarray) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning first would fail the test
        with pytest.raises(np.linalg.LinAlgError):
            call(matrix)


def test_the_raw_kernels_alone_warn_or_return_nans() -> None:
    """The controls: without the errstate the kernel warns; without the check it returns."""
    from numpy.linalg import _umath_linalg

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning):
            _umath_linalg.eigh_lo(np.full((3, 3), np.nan), signature="d->dd")
    with np.errstate(all="ignore"):
        raw = _umath_linalg.solve1(np.zeros((2, 2)), np.ones(2), signature="dd->d")
    assert np.isnan(raw).all()
