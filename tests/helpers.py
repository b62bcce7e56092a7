"""Small shard specs, calibration checks and shared fixtures for unit tests."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from dpbandits.privacy import accountant
from dpbandits.privacy.exact_noise import ExactNoise

GRID_RELATIVE = 2.0**-19  # exact noise: σ/γ ≥ 2^20, rounding σ up costs < one part in 2^20


def assert_snapped_calibration(used: float, formula: float, noise_over_sensitivity: float,
                               dim: int) -> None:
    """A strict-mode noise scale is the continuous formula raised only by the grid: at least
    the formula, and at most the formula × (1 + γ/σ·(1 + √dim·σ/Δ)) with γ/σ ≤ 2^-19."""
    slack = GRID_RELATIVE * (1.0 + math.sqrt(dim) * noise_over_sensitivity)
    assert formula <= used <= formula * (1.0 + slack), (used, formula, slack)


def small_spec(**overrides: Any) -> dict[str, Any]:
    spec = {
        "experiment": "unit",
        "algorithm": "Uniform",
        "policy": "Uniform",
        "params": {},
        "epsilon": None,
        "delta": 0.02,
        "accounting": "strict",
        "instance": {
            "generator": "glm_ball",
            "family": "probit",
            "d": 3,
            "K": 5,
            "S": 2.0,
            "horizon": 60,
            "seed": 11,
        },
        "instance_index": 0,
        "trials": [0, 1, 2],
        "seed": 11,
    }
    spec.update(overrides)
    return spec


@pytest.fixture
def isolated_cache(tmp_path_factory, monkeypatch):
    """The accountant's disk cache in this session's temporary folder, its memo empty (import
    it into a test module and name it in `pytest.mark.usefixtures`)."""
    monkeypatch.setenv("DPBANDITS_CACHE", str(tmp_path_factory.getbasetemp() / "acc-cache"))
    accountant.clear_memo()
    yield
    accountant.clear_memo()


def two_sampler_matrix(noise: ExactNoise, sigma_d: float, sigma_a: float, dim: int
                       ) -> np.ndarray:
    """The symmetric matrix `gaussian_sampler(σ_d)` draws on the diagonal, then
    `gaussian_sampler(σ_a)` above it (row by row), mirrored below."""
    rows, cols = np.triu_indices(dim, 1)
    out = np.zeros((dim, dim))
    out[np.arange(dim), np.arange(dim)] = noise.gaussian_sampler(sigma_d)((dim,))
    if rows.size:
        upper = noise.gaussian_sampler(sigma_a)((rows.size,))
        out[rows, cols] = upper
        out[cols, rows] = upper
    return out
