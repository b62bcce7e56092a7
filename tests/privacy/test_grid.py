"""Rounding to the grid of exact noise in kernels is `ExactNoise.snap`'s, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits.privacy.exact_noise import ExactNoise
from dpbandits.privacy.grid import snap


@pytest.mark.parametrize("scale", [1e-3, 0.3, 1.7, 50.0, 2.0**40])
def test_snap_is_exact_noises_snap(scale: float) -> None:
    rng = np.random.default_rng(0)
    noise = ExactNoise(rng)
    gamma = noise.grid(scale)
    values = rng.normal(size=2000) * 10.0 ** rng.uniform(-8, 20, 2000)
    edges = [0.0, -0.0, 0.5 * gamma, 1.5 * gamma, 2.5 * gamma, -0.5 * gamma, np.nan, np.inf,
             -np.inf, 2.0**53 * gamma, -(2.0**54) * gamma, np.nextafter(2.0**53 * gamma, 0)]
    values = np.concatenate([values, edges])
    expected = noise.snap(values, scale)
    found = np.array([snap(v, gamma) for v in values])
    assert found.tobytes() == expected.tobytes()
    assert snap(0.1234, 0.0) == 0.1234  # no grid: kept
