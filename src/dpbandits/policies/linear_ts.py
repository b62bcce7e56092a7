"""Non-private references of the AdaPrivate-TS paper (docs/ts.md, "LinUCB and LinTS")."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from dpbandits.contract import OutcomeTables
from dpbandits.jit import jit
from dpbandits.linalg import cho_solve, cholesky, solve_lower_t
from dpbandits.params import Declaration, number
from dpbandits.policies.linear_core import (
    ALPHA,
    LinearPolicy,
    greedy_index,
    ridge_update,
    ucb_index,
)
from dpbandits.policies.tables import pull
from dpbandits.privacy.clipping import clip_reward


@jit
def linucb_arm(A: np.ndarray, b: np.ndarray, alpha: float, arms: np.ndarray) -> int:
    """LinUCB (Li et al. 2010, Alg. 1): argmax_x xᵀθ̂ + α‖x‖_{A⁻¹}, θ̂ = A⁻¹b."""
    factor = cholesky(A)
    return ucb_index(arms, cho_solve(factor, b), factor, alpha)


@jit
def lints_arm(A: np.ndarray, b: np.ndarray, v: float, arms: np.ndarray, z: np.ndarray) -> int:
    """Linear TS (Agrawal & Goyal 2013): argmax_x xᵀθ̃, θ̃ = θ̂ + v·L⁻ᵀz ~ N(A⁻¹b, v²A⁻¹) for
    the round's standard normal z."""
    factor = cholesky(A)
    sample = solve_lower_t(factor, z)
    return greedy_index(arms, cho_solve(factor, b) + v * sample)


@jit
def linucb_rounds(A: np.ndarray, b: np.ndarray, alpha: float, tables: OutcomeTables) -> None:
    """Every round of LinUCB on pre-drawn tables."""
    for t in range(tables.arms.shape[0]):
        i = linucb_arm(A, b, alpha, tables.arms[t])
        ridge_update(A, b, tables.arms[t, i], clip_reward(pull(tables, t, i)))


@jit
def lints_rounds(A: np.ndarray, b: np.ndarray, v: float, normals: np.ndarray,
                 tables: OutcomeTables) -> None:
    """Every round of LinTS on pre-drawn tables, round t's standard normal z in normals[t]."""
    for t in range(tables.arms.shape[0]):
        i = lints_arm(A, b, v, tables.arms[t], normals[t])
        ridge_update(A, b, tables.arms[t, i], clip_reward(pull(tables, t, i)))


class LinUCB(LinearPolicy):
    """LinUCB (Li et al. 2010), shared θ: score xᵀA⁻¹b + α‖x‖_{A⁻¹}, A and b updated every round."""

    name = "LinUCB"
    plays_tables = True
    decision_rule = staticmethod(linucb_arm)
    update_rule = staticmethod(ridge_update)
    parameters: ClassVar[Declaration] = (
        *LinearPolicy.parameters, ALPHA)

    def setup(self) -> None:
        self.alpha = float(self.params["alpha"])

    def choose(self, t: int, arms: np.ndarray) -> int:
        return linucb_arm(self.A, self.b, self.alpha, arms)

    def observe(self, t: int, x: np.ndarray, r: float) -> None:
        ridge_update(self.A, self.b, x, r)

    def play_table(self, tables: OutcomeTables) -> None:
        linucb_rounds(self.A, self.b, self.alpha, tables)


class LinTS(LinearPolicy):
    """Linear TS (Agrawal & Goyal 2013): θ̃ ~ N(A⁻¹b, v²A⁻¹) each round, a = argmax xᵀθ̃."""

    name = "LinTS"
    plays_tables = True
    decision_rule = staticmethod(lints_arm)
    update_rule = staticmethod(ridge_update)
    parameters: ClassVar[Declaration] = (
        *LinearPolicy.parameters, number("v", 1.0, "exploration scale v of N(θ̂, v²A⁻¹)", gt=0))

    def setup(self) -> None:
        self.v = float(self.params["v"])

    def choose(self, t: int, arms: np.ndarray) -> int:
        return lints_arm(self.A, self.b, self.v, arms, self.explore_rng.standard_normal(self.d))

    def observe(self, t: int, x: np.ndarray, r: float) -> None:
        ridge_update(self.A, self.b, x, r)

    def play_table(self, tables: OutcomeTables) -> None:
        normals = self.explore_rng.standard_normal((len(tables.chosen), self.d))
        lints_rounds(self.A, self.b, self.v, normals, tables)
