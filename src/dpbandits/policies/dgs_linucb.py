"""DGS-LinUCB (Wang, Zhao & Wang, RecSys 2022) in per-step form (docs/ts.md, "DGS-LinUCB").

Every round θ̃_t = A_t⁻¹b_t + N(0, σ_t²I) with dynamic sensitivity Δ_t = 1/λ_min(A_t) and
σ_t = Δ_t·√(T/(2ρ)) (ρ/T per release, sequential composition over T releases). Each release
goes through `privacy.release.release` (one ledger entry for the run's releases, at the largest
cost of any); the round's statistics and the next round are compiled (`dgs_round`).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from dpbandits.audit.spec import PolicyAudit, reward_audit
from dpbandits.contract import Environment, OutcomeTables, ProblemInfo
from dpbandits.errors import ConfigError
from dpbandits.jit import jit
from dpbandits.linalg import cho_solve_into, cholesky_into, smallest_eigenvalue
from dpbandits.params import Declaration
from dpbandits.policies.linear_core import (
    ALPHA,
    CONVERSION,
    LinearPolicy,
    ZCDPMixin,
    ridge_update,
    ucb_index,
)
from dpbandits.policies.tables import pull
from dpbandits.privacy.clipping import clip_reward
from dpbandits.privacy.release import release


@jit
def dgs_estimate(A: np.ndarray, b: np.ndarray, factor: np.ndarray, theta: np.ndarray,
                 work: np.ndarray, diag: np.ndarray, off: np.ndarray) -> float:
    """Round t's statistics: the factor L_t of A_t into `factor`, θ̂_t = A_t⁻¹b_t into `theta`;
    returns λ_min(A_t), whose inverse is the release's sensitivity Δ_t."""
    if not cholesky_into(A, factor):
        raise np.linalg.LinAlgError("Cholesky failed: the matrix is not positive definite")
    cho_solve_into(factor, b, diag, theta)
    return smallest_eigenvalue(A, work, diag, off)


@jit
def dgs_arm(factor: np.ndarray, theta: np.ndarray, alpha: float, arms: np.ndarray) -> int:
    """DGS-LinUCB's action: argmax_x xᵀθ̃_t + α‖x‖_{A_t⁻¹} for the round's release θ̃_t."""
    return ucb_index(arms, theta, factor, alpha)


@jit
def dgs_round(A: np.ndarray, b: np.ndarray, factor: np.ndarray, theta: np.ndarray,
              work: np.ndarray, diag: np.ndarray, off: np.ndarray, alpha: float,
              arms: np.ndarray, rewards: np.ndarray, regrets: np.ndarray, regret: np.ndarray,
              reward: np.ndarray, chosen: np.ndarray, t: int) -> float:
    """Round t on pre-drawn tables acting on its release θ̃_t (in `theta`), then round t + 1's
    statistics (`dgs_estimate`): λ_min(A_{t+1})."""
    tables = OutcomeTables(arms, rewards, regrets, regret, reward, chosen)
    i = dgs_arm(factor, theta, alpha, arms[t])
    ridge_update(A, b, arms[t, i], clip_reward(pull(tables, t, i)))
    return dgs_estimate(A, b, factor, theta, work, diag, off)


class DGSLinUCB(ZCDPMixin, LinearPolicy):
    """Per-step θ̂-perturbation, score xᵀθ̃_t + α‖x‖_{A_t⁻¹}."""

    name = "DGS-LinUCB"
    plays_tables = True
    decision_rule = staticmethod(dgs_arm)
    update_rule = staticmethod(ridge_update)
    audits: ClassVar[tuple[PolicyAudit, ...]] = (reward_audit(name),)
    private = True
    parameters: ClassVar[Declaration] = (*LinearPolicy.parameters, ALPHA, CONVERSION)
    # |r − r'| ≤ 1 for clipped rewards: Δ_t = 1/λ_min(A_t) per unit of it (docs/ts.md)
    REWARD_SENSITIVITY: ClassVar[float] = 1.0
    release_name = "theta-hat every round"

    def __init__(self, problem: ProblemInfo, rng: np.random.Generator, **kwargs: Any) -> None:
        super().__init__(problem, rng, **kwargs)
        self.alpha = float(self.params["alpha"])
        self.rho = self.zcdp_setup()
        self.scale = math.sqrt(self.horizon / (2.0 * self.rho))
        self.note = self.ledger_note()
        self.releases = 0
        self.last_sigma = 0.0
        self.released_at = -1  # the round of the last release θ̃
        d = self.d
        self.factor_work = np.empty((d, d))  # L_t
        self.theta = np.zeros(d)  # θ̂_t, then the release θ̃_t
        self.eigen_work = (np.empty((d, d)), np.empty(d), np.empty(d))

    def begin(self, env: Environment) -> None:
        super().begin(env)
        self.scale = math.sqrt(self.horizon / (2.0 * self.rho))
        self.note = self.ledger_note()
        self.releases = 0
        self.released_at = -1

    def ledger_note(self) -> str:
        """The note of the ledger entry of the run's releases."""
        return (f"sensitivity 1/lambda_min(A_t) per round; noise multiplier sqrt(T/(2 rho)) = "
                f"{self.scale:.6g}; count releases composed sequentially at the largest rho "
                "of any")

    def estimate(self) -> float:
        """`dgs_estimate` of the current statistics: λ_min(A_t)."""
        return dgs_estimate(self.A, self.b, self.factor_work, self.theta, *self.eigen_work)

    def sensitivity_at(self, smallest: float) -> float:
        """Δ_t = 1/λ_min(A_t): replacing one reward moves θ̂_t by ≤ ‖A_t⁻¹x‖ ≤ 1/λ_min(A_t)
        (docs/ts.md, "DGS-LinUCB")."""
        if not smallest > 0.0:  # NaN or a singular A: no finite sensitivity
            raise ConfigError(f"DGS-LinUCB: lambda_min(A_t) = {smallest!r}; the release's "
                              "sensitivity 1/lambda_min must be finite")
        return self.REWARD_SENSITIVITY / smallest

    def sigma_for(self, sensitivity: float) -> float:
        """σ_t = Δ_t·√(T/(2ρ)): as calibrated for continuous noise, raised for the grid of exact
        noise (strict)."""
        if not self.noise.exact:
            return self.scale * sensitivity
        return self.calibrate_release(sensitivity * self.scale, sensitivity)

    def release(self, t: int, smallest: float | None = None) -> None:
        """Round t's release θ̃_t = θ̂_t + N(0, σ_t²I) into `theta` (one per round), from the
        statistics `estimate` computed (λ_min(A_t) = `smallest`) or computes now."""
        if smallest is None:
            smallest = self.estimate()
        sensitivity = self.sensitivity_at(smallest)
        sigma = self.sigma_for(sensitivity)
        self.theta[:] = release(self.noise, self.ledger, self.theta, name=self.release_name,
                                mechanism="gaussian", sensitivity=sensitivity, scale=sigma,
                                merge=True, note=self.note)
        self.last_sigma = sigma
        self.released_at = t
        self.releases += 1

    def choose(self, t: int, arms: np.ndarray) -> int:
        """One release per round t: a replay asking again at the same t reuses θ̃_t."""
        if self.released_at != t:
            self.release(t)
        return dgs_arm(self.factor_work, self.theta, self.alpha, arms)

    def observe(self, t: int, x: np.ndarray, r: float) -> None:
        ridge_update(self.A, self.b, x, r)

    def play_table(self, tables: OutcomeTables) -> None:
        """Each round's release made here (`release`), the round and the next round's
        statistics compiled (`dgs_round`)."""
        horizon = len(tables.chosen)
        if not horizon:
            return
        smallest = self.estimate()
        for t in range(horizon):
            self.release(t, smallest)
            smallest = dgs_round(self.A, self.b, self.factor_work, self.theta,
                                 *self.eigen_work, self.alpha, *tables, t)

    def diagnostics(self) -> dict[str, float]:
        return {"rho": self.rho, "noise_multiplier": self.scale, "sigma_last": self.last_sigma}
