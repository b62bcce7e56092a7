"""Non-private references of the AdaPrivate-TS paper (docs/ts.md, "LinUCB and LinTS")."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from dpbandits.contract import OutcomeTables
from dpbandits.linalg import solve_lower_t
from dpbandits.params import Declaration, number
from dpbandits.policies.linear_core import (
    ALPHA,
    LinearPolicy,
    add_reward,
    ucb_index,
)
from dpbandits.policies.ridge_rounds import MEAN_EVERY_ROUND, TS, UCB, play_rounds


class LinUCB(LinearPolicy):
    """LinUCB (Li et al. 2010), shared θ: score xᵀA⁻¹b + α‖x‖_{A⁻¹}, A and b updated every round."""

    name = "LinUCB"
    plays_tables = True
    parameters: ClassVar[Declaration] = (
        *LinearPolicy.parameters, ALPHA)

    def setup(self) -> None:
        self.alpha = float(self.params["alpha"])

    def choose(self, t: int, arms: np.ndarray) -> int:
        theta = self.ridge_mean()
        return ucb_index(arms, theta, self.factor(), self.alpha)

    def observe(self, t: int, x: np.ndarray, r: float) -> None:
        self.add_to_gram(x)
        add_reward(self.b, x, r)

    def play_table(self, tables: OutcomeTables) -> None:
        play_rounds(self, tables, 0, UCB, self.alpha, MEAN_EVERY_ROUND, np.empty(self.d))


class LinTS(LinearPolicy):
    """Linear TS (Agrawal & Goyal 2013): θ̃ ~ N(A⁻¹b, v²A⁻¹) each round, a = argmax xᵀθ̃."""

    name = "LinTS"
    plays_tables = True
    parameters: ClassVar[Declaration] = (
        *LinearPolicy.parameters, number("v", 1.0, "exploration scale v of N(θ̂, v²A⁻¹)", gt=0))

    def setup(self) -> None:
        self.v = float(self.params["v"])

    def choose(self, t: int, arms: np.ndarray) -> int:
        theta = self.ridge_mean()
        sample = solve_lower_t(self.factor(), self.explore_normals.next())
        if self.v != 1.0:  # 1·ξ is ξ: no bit changes
            sample *= self.v
        sample += theta  # θ + v·ξ
        return int((arms @ sample).argmax())

    def observe(self, t: int, x: np.ndarray, r: float) -> None:
        self.add_to_gram(x)
        add_reward(self.b, x, r)

    def play_table(self, tables: OutcomeTables) -> None:
        t, theta = 0, np.empty(self.d)
        while t < self.horizon:  # one call per block of exploration normals
            t = play_rounds(self, tables, t, TS, self.v, MEAN_EVERY_ROUND, theta).t
