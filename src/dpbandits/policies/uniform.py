"""Uniform random arm choice: the reference line every learning policy must beat."""

from __future__ import annotations

import numpy as np

from dpbandits.policies.base import Policy


class Uniform(Policy):
    """Plays an arm chosen uniformly at random from the offered set."""

    name = "Uniform"

    def select(self, t: int, arms: np.ndarray) -> int:
        return int(self.rng.integers(len(arms)))

    def update(self, t: int, x: np.ndarray, r: float) -> None:
        return None
