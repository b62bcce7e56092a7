"""Parameter checks shared by the non-private GLM baselines (one-line ConfigErrors)."""

from __future__ import annotations

import math

from dpbandits.errors import ConfigError
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
