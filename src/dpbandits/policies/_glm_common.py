"""What the non-private GLM baselines share: parameter checks (one-line ConfigErrors), the
optimistic index kernel and the round loop of the rounds they play in Python."""

from __future__ import annotations

import math

import numpy as np

from dpbandits.errors import ConfigError
from dpbandits.glm import quad_form
from dpbandits.jit import jit
from dpbandits.linalg import dot, first_argmax
from dpbandits.links import mean
from dpbandits.params import number

DEFAULT_DELTA = 0.02


def confidence_delta(delta: float | None) -> float:
    """The confidence parameter δ of a non-private baseline: the `delta` argument, 0.02 if None."""
    if delta is None:
        return DEFAULT_DELTA
    if not isinstance(delta, int | float) or not math.isfinite(delta) or not 0 < delta < 1:
        raise ConfigError(f"delta = {delta!r} is not allowed; must be in the open interval (0, 1)")
    return float(delta)


NEWTON_CAP = number("newton_cap", 10.0, "Newton iterates are kept in ‖θ‖ ≤ newton_cap·S", gt=0)


@jit
def optimistic_index(arms: np.ndarray, centre: np.ndarray, V_inv: np.ndarray, width: float,
                     kind: int) -> int:
    """First argmax over the rows x of `arms` of μ(xᵀθ) + width·‖x‖_{V⁻¹} (the link `kind`;
    the linear kind scores xᵀθ itself)."""
    scores = np.empty(arms.shape[0])
    for k in range(arms.shape[0]):
        x = arms[k]
        scores[k] = mean(kind, dot(x, centre)) + width * math.sqrt(quad_form(x, V_inv))
    return first_argmax(scores)
