"""The C forward-difference recursion gives the numpy formulation's bits (WBK 2019, Thm 27)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits.privacy import _wbk
from dpbandits.privacy.accountant import _log_forward_diffs


def numpy_forward_diffs(sigma: float, n: int) -> tuple[np.ndarray, int]:
    """The vectorised numpy recursion, one pass per row, and how many rows mixed signs."""
    vec = np.zeros(n + 3)
    x = np.arange(0, n + 2, dtype=float)
    vec[1:] = x * (x + 1.0) / (2.0 * sigma**2)
    signs = np.ones(n + 3, dtype=bool)
    deltas = np.empty(n + 2)
    mixed = 0
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for i in range(n + 2):
            m = n + 2 - i
            a, b = vec[:m], vec[1 : m + 1]
            sa, sb = signs[:m], signs[1 : m + 1]
            gap = np.abs(b - a)
            hi = np.maximum(a, b)
            same = sa == sb
            if same.all():
                new = hi + np.log1p(-np.exp(-gap))
                new_sign = (b >= a) == sb
            else:
                mixed += 1
                sub = hi + np.log1p(-np.exp(-gap))
                add = hi + np.log1p(np.exp(-gap))
                new = np.where(same, sub, add)
                new_sign = np.where(same, (b >= a) == sb, sb)
            new[np.isnan(new)] = -np.inf
            vec[:m] = new
            signs[:m] = new_sign
            deltas[i] = vec[0]
    return deltas, mixed


def test_the_recursion_gives_numpys_bits() -> None:
    """Random σ from 0.02 to 5000 (rows of mixed signs appear above σ ≈ 30) and every n the
    accountant asks for: equal bytes, -inf and all. (σ**2 is C's pow, which for some σ is not
    σ·σ: e.g. σ = 19.82702778847933, where squaring in C gave other bits.)"""
    rng = np.random.default_rng(11)
    mixed_rows = 0
    for _ in range(1500):
        sigma = math.exp(rng.uniform(math.log(0.02), math.log(5000.0)))
        n = int(rng.choice([0, 1, 2, 5, 64, 96, 128, 192, 256]))
        expected, mixed = numpy_forward_diffs(sigma, n)
        mixed_rows += mixed
        assert _log_forward_diffs(sigma, n).tobytes() == expected.tobytes(), (sigma, n)
    assert mixed_rows > 1000  # both branches of the recursion were compared
    sigma = 19.82702778847933
    assert sigma**2 != sigma * sigma
    assert _log_forward_diffs(sigma, 192).tobytes() == numpy_forward_diffs(sigma, 192)[0].tobytes()


def test_the_comparison_sees_one_ulp_of_sigma() -> None:
    """The control: σ one ulp higher gives other bits, so equal bytes above mean something."""
    sigma = 1.7
    expected, _ = numpy_forward_diffs(sigma, 64)
    moved = _log_forward_diffs(math.nextafter(sigma, math.inf), 64)
    assert moved.tobytes() != expected.tobytes()


@pytest.mark.parametrize("n, out", [
    (-1, np.empty(1)),
    (2**61, np.empty(2)),  # (n + 2)·8 bytes would overflow
    (4, np.empty(5)),
    (4, np.empty(6, dtype=np.int64)),
    (4, np.empty((2, 3))),
    (4, bytearray(48)),
])
def test_bad_arguments_are_refused(n: int, out: object) -> None:
    with pytest.raises(ValueError, match="is not allowed"):
        _wbk.log_forward_diffs(2.0, n, out)
