"""The grid of exact noise in compiled kernels: rounding to it (`snap`, `snap_all`, what
`ExactNoise.snap` does) and a release on it (CKS 2020, Thm 4: the snapped value plus discrete
noise on the same grid γ)."""

from __future__ import annotations

import numpy as np

from dpbandits.jit import jit

SNAP_LIMIT = 2.0**53  # |v| ≥ 2^53·γ is a multiple of γ already (and v/γ might overflow)


@jit
def snap(value: float, grid: float) -> float:
    """`value` rounded to the nearest multiple of γ = `grid` (ties to even; exact), or kept as
    it is where γ = 0 (no grid) or |value| ≥ 2^53·γ (NaN and ±∞ included)."""
    if grid == 0.0 or not abs(value) < SNAP_LIMIT * grid:
        return value
    return np.rint(value / grid) * grid


@jit
def snap_all(values: np.ndarray, grid: float) -> None:
    """Every entry of the 1-d array rounded to the grid γ in place (`snap`)."""
    for i in range(values.shape[0]):
        values[i] = snap(values[i], grid)


@jit
def noisy_into(value: np.ndarray, scale: float, grid: float, z: np.ndarray,
               out: np.ndarray) -> None:
    """A Gaussian release of `value`: out = value + scale·z with continuous noise (grid 0, z
    standard normal, scale σ), or snap(value, γ) + γ·z with exact noise (z discrete Gaussian
    integers of scale σ/γ, scale = grid = γ; CKS 2020, Thm 4)."""
    for i in range(value.shape[0]):
        out[i] = snap(value[i], grid) + scale * z[i]
