"""Rounding to the grid of exact noise inside compiled kernels: what `ExactNoise.snap` does to
one value (CKS 2020, Thm 4: the snapped value plus discrete noise on the same grid γ)."""

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
