"""Parameter checks shared by the non-private GLM baselines (one-line ConfigErrors)."""

from __future__ import annotations

import math
from typing import Any

from dpbandits.errors import ConfigError

DEFAULT_DELTA = 0.02


def confidence_delta(delta: float | None) -> float:
    """The confidence parameter δ of a non-private baseline: the `delta` argument, 0.02 if None."""
    if delta is None:
        return DEFAULT_DELTA
    if not isinstance(delta, int | float) or not math.isfinite(delta) or not 0 < delta < 1:
        raise ConfigError(f"delta = {delta!r} is not allowed; must be in the open interval (0, 1)")
    return float(delta)


def check_bool(algorithm: str, key: str, value: Any, allow_none: bool = False) -> bool | None:
    """A boolean hyper-parameter (or None where None means "derived")."""
    if value is None and allow_none:
        return None
    if not isinstance(value, bool):
        allowed = "true, false or null" if allow_none else "true or false"
        raise ConfigError(f"{algorithm}: {key} = {value!r} is not allowed; allowed: {allowed}")
    return value


def check_choice(algorithm: str, key: str, value: Any, choices: tuple[str, ...]) -> str:
    """A hyper-parameter taking one of a few names."""
    if value not in choices:
        raise ConfigError(
            f"{algorithm}: {key} = {value!r} is not allowed; allowed: {', '.join(choices)}"
        )
    return str(value)


def check_positive(
    algorithm: str, key: str, value: Any, allow_none: bool = False, allow_zero: bool = False
) -> float | None:
    """A finite positive (or non-negative) number, or None where None means "derived"."""
    if value is None and allow_none:
        return None
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value >= 0 if allow_zero else value > 0)
    if not ok:
        bound = ">= 0" if allow_zero else "> 0"
        extra = " (or null for the default)" if allow_none else ""
        raise ConfigError(
            f"{algorithm}: {key} = {value!r} is not allowed; must be a finite number {bound}{extra}"
        )
    return float(value)
