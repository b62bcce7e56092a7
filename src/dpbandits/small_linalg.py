"""numpy.linalg's LAPACK kernels for small float64 matrices, called without the wrapper.

`np.linalg.eigh`, `eigvalsh`, `solve`, `cholesky`, `svd` and `slogdet` check their input's
type and shape and build an `errstate` on every call: 3–4 µs, as long as the LAPACK work on a
5 × 5 matrix, in loops that call them once per round. The functions here call the same
compiled gufuncs with the same signatures, so for float64 input they return the same bits: for
one matrix, and for a stack of them each matrix's (the gufunc runs the same LAPACK call per
matrix; a non-finite result anywhere in a stack sends the whole stack to `np.linalg`).
A failed or singular decomposition fills its outputs with NaN and sets the invalid flag, which
is ignored here; when the output checked is not finite, the `np.linalg` function itself is
called, which raises its LinAlgError (or returns the same non-finite result, silently, as it
would have). `einsum` is the compiled kernel behind `np.einsum(..., optimize=False)`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

try:
    from numpy._core.multiarray import c_einsum as einsum
    from numpy.linalg import _umath_linalg as _kernels
except ImportError:  # pragma: no cover - other numpy layouts: the public functions
    einsum, _kernels = np.einsum, None

__all__ = ["cholesky", "eigh", "eigvalsh", "einsum", "slogdet", "slogdet_stack", "solve",
           "svd_thin"]


def _finite(array: np.ndarray) -> bool:
    """Every entry finite (their sum is finite only then, barring overflow)."""
    return math.isfinite(sum(array.ravel().tolist()))


def _direct(kernel: str, signature: str, checked: int | None, fallback: Callable[..., Any],
            *args: np.ndarray) -> Any:
    """`_kernels.<kernel>(*args)` with LAPACK's flags ignored if its output (item `checked` of
    a tuple of outputs, or the one output when None) is finite, else `fallback(*args)`."""
    if _kernels is not None:
        with np.errstate(all="ignore"):
            out = getattr(_kernels, kernel)(*args, signature=signature)
        if _finite(out if checked is None else out[checked]):
            return out
    return fallback(*args)


def eigh(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.linalg.eigh(a)`: eigenvalues (ascending) and eigenvectors from the lower triangle."""
    vals, vecs = _direct("eigh_lo", "d->dd", 0, np.linalg.eigh, a)
    return vals, vecs


def eigvalsh(a: np.ndarray) -> np.ndarray:
    """`np.linalg.eigvalsh(a)`: eigenvalues (ascending) from the lower triangle."""
    return _direct("eigvalsh_lo", "d->d", None, np.linalg.eigvalsh, a)


def solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`np.linalg.solve(a, b)` for a square matrix and a vector or matrix right-hand side."""
    kernel = "solve1" if np.ndim(b) == 1 else "solve"
    return _direct(kernel, "dd->d", None, np.linalg.solve, a, b)


def cholesky(a: np.ndarray) -> np.ndarray:
    """`np.linalg.cholesky(a)`: the lower factor."""
    return _direct("cholesky_lo", "d->d", None, np.linalg.cholesky, a)


def svd_thin(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`np.linalg.svd(a, full_matrices=False)`: (U, s, Vᵀ)."""
    u, s, vt = _direct("svd_s", "d->ddd", 1, _numpy_svd_thin, a)
    return u, s, vt


def _numpy_svd_thin(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """numpy's thin SVD: what `svd_thin` falls back to."""
    return np.linalg.svd(a, full_matrices=False)


def slogdet_stack(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.linalg.slogdet` of a stack of square float64 matrices: (signs, ln |det|), each
    matrix's as `slogdet` gives it."""
    if _kernels is not None:
        return _kernels.slogdet(a, signature="d->dd")
    sign, value = np.linalg.slogdet(a)
    return sign, value


def slogdet(a: np.ndarray) -> tuple[float, float]:
    """`np.linalg.slogdet(a)` of a square float64 matrix: (sign, ln |det a|) as floats."""
    if _kernels is not None and isinstance(a, np.ndarray) and a.dtype == np.float64:
        sign, value = _kernels.slogdet(a, signature="d->dd")
    else:
        sign, value = np.linalg.slogdet(a)
    return float(sign), float(value)
