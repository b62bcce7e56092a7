"""Rounding to the grid of exact noise (`privacy/grid.py`), and releases on it."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits.privacy.exact_noise import ExactNoise
from dpbandits.privacy.grid import noisy_into, snap, snap_all


def written_out(values: np.ndarray, gamma: float) -> np.ndarray:
    """The nearest multiple of γ (ties to even), |v| ≥ 2^53·γ (±∞, NaN) kept as it is."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(np.abs(values) >= 2.0**53 * gamma, values, np.rint(values / gamma) * gamma)


@pytest.mark.parametrize("scale", [1e-3, 0.3, 1.7, 50.0, 2.0**40])
def test_snap_rounds_to_the_nearest_multiple_of_the_grid(scale: float) -> None:
    rng = np.random.default_rng(0)
    noise = ExactNoise(rng)
    gamma = noise.grid(scale)
    values = rng.normal(size=2000) * 10.0 ** rng.uniform(-8, 20, 2000)
    edges = [0.0, -0.0, 0.5 * gamma, 1.5 * gamma, 2.5 * gamma, -0.5 * gamma, np.nan, np.inf,
             -np.inf, 2.0**53 * gamma, -(2.0**54) * gamma, np.nextafter(2.0**53 * gamma, 0)]
    values = np.concatenate([values, edges])
    expected = written_out(values, gamma)
    assert np.array([snap(v, gamma) for v in values]).tobytes() == expected.tobytes()
    everything = values.copy()
    snap_all(everything, gamma)
    assert everything.tobytes() == expected.tobytes()
    assert noise.snap(values.reshape(2, -1), scale).tobytes() == expected.tobytes()
    assert snap(0.1234, 0.0) == 0.1234  # no grid: kept
    assert written_out(np.array([0.6 * gamma]), gamma)[0] != 0.6 * gamma  # the control moves


def test_a_release_is_the_snapped_value_plus_grid_noise() -> None:
    """`noisy_into`: snap(v, γ) + γ·z with exact noise, v + σ·z with continuous noise; and
    `ExactNoise.release` draws what `snap` + `gaussian` draw, from the same stream."""
    g = np.random.default_rng(8)
    values = np.concatenate([g.standard_normal(50) * 10.0 ** g.integers(-3, 14, 50),
                             [1e300, -1e300, np.inf, -np.inf, np.nan, 0.0, -0.0, 2.5, -3.5]])
    z = g.integers(-5000, 5000, values.shape).astype(float)
    out = np.empty_like(values)
    gamma = 2.0**-10
    noisy_into(values, gamma, gamma, z, out)
    with np.errstate(invalid="ignore"):
        assert out.tobytes() == (written_out(values, gamma) + gamma * z).tobytes()
        noisy_into(values, 2.5, 0.0, z, out)
        assert out.tobytes() == (values + 2.5 * z).tobytes()
    for sigma in (0.013, 1.0545, 490.1, 3.1e7):
        for value in (values[:20] * 1e3, np.array(7.25), g.standard_normal((3, 4)), np.zeros(0)):
            fast, ref = ExactNoise(np.random.default_rng(9)), ExactNoise(np.random.default_rng(9))
            with np.errstate(over="ignore", invalid="ignore"):
                expected = ref.snap(value, sigma) + ref.gaussian(sigma, np.shape(value))
                got = fast.release(value, sigma)
            assert got.tobytes() == expected.tobytes()
            assert fast.rng.random() == ref.rng.random()  # the streams moved alike
