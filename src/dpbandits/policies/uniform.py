"""Uniform random arm choice: the reference line every learning policy must beat."""

from __future__ import annotations

import numpy as np

from dpbandits.contract import OutcomeTables
from dpbandits.jit import jit
from dpbandits.policies.base import Policy
from dpbandits.policies.tables import pull


@jit
def uniform_arm(arms: np.ndarray, rng: np.random.Generator) -> int:
    """An arm drawn uniformly at random from the offered set."""
    return rng.integers(0, arms.shape[0])


@jit
def learn_nothing(x: np.ndarray, r: float) -> None:
    """Uniform choice learns nothing from a reward."""


@jit
def uniform_rounds(rng: np.random.Generator, tables: OutcomeTables) -> None:
    """Every round of uniform choice on pre-drawn tables."""
    for t in range(tables.arms.shape[0]):
        i = uniform_arm(tables.arms[t], rng)
        learn_nothing(tables.arms[t, i], pull(tables, t, i))


class Uniform(Policy):
    """Plays an arm chosen uniformly at random from the offered set."""

    name = "Uniform"
    plays_tables = True
    decision_rule = staticmethod(uniform_arm)
    update_rule = staticmethod(learn_nothing)

    def select(self, t: int, arms: np.ndarray) -> int:
        return uniform_arm(arms, self.rng)

    def update(self, t: int, x: np.ndarray, r: float) -> None:
        learn_nothing(x, r)

    def play_table(self, tables: OutcomeTables) -> None:
        uniform_rounds(self.rng, tables)
