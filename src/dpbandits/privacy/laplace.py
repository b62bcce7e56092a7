"""Laplace mechanism: calibration, per-reward noise and exact sums of iid Laplace noise."""

from __future__ import annotations

import math

import numpy as np

from dpbandits.errors import ConfigError


def check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    """ε must be a finite number > 0."""
    if (
        not isinstance(epsilon, int | float | np.number)
        or not math.isfinite(epsilon)
        or epsilon <= 0
    ):
        raise ConfigError(f"{name} = {epsilon!r} is not allowed; must be a finite number > 0")
    return float(epsilon)


def laplace_scale(sensitivity: float, epsilon: float) -> float:
    """Noise scale b = Δ/ε of the ε-DP Laplace mechanism (Dwork–Roth Thm 3.6)."""
    check_epsilon(epsilon)
    if not math.isfinite(sensitivity) or sensitivity <= 0:
        raise ConfigError(f"sensitivity = {sensitivity!r} is not allowed; must be a number > 0")
    return float(sensitivity) / float(epsilon)


def laplace_noise(
    rng: np.random.Generator, scale: float, size: int | tuple[int, ...]
) -> np.ndarray:
    """iid Laplace(0, scale) draws."""
    return rng.laplace(0.0, scale, size)


def laplace_sum(rng: np.random.Generator, counts: np.ndarray, scale: float) -> np.ndarray:
    """Exact draw of Σ of n iid Laplace(0, b) per entry: Gamma(n, b) − Gamma(n, b)."""
    n = np.asarray(counts, dtype=float)
    out = np.zeros(n.shape)
    pos = n > 0
    if np.any(pos):
        out[pos] = rng.gamma(n[pos], scale) - rng.gamma(n[pos], scale)
    return out


def clip_rewards(rewards: np.ndarray, bound: float) -> np.ndarray:
    """Clip rewards to [−B, B] so that a replace-one change moves a sum by at most 2B."""
    return np.clip(rewards, -bound, bound)
