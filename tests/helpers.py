"""Small shard specs for unit tests."""

from __future__ import annotations

from typing import Any


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
