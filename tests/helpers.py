"""Small shard specs and calibration checks for unit tests."""

from __future__ import annotations

import math
from typing import Any

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
