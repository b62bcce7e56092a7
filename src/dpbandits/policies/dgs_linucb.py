"""DGS-LinUCB (Wang, Zhao & Wang, RecSys 2022) in per-step form (docs/ts.md, "DGS-LinUCB").

Every round θ̃_t = A_t⁻¹b_t + N(0, σ_t²I) with dynamic sensitivity Δ_t = 1/λ_min(A_t) and
σ_t = Δ_t·√(T/(2ρ)) (ρ/T per release, sequential composition over T releases).
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
from dpbandits.privacy.exact_noise import discrete_gaussian
from dpbandits.privacy.grid import noisy_into


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
def dgs_paper_rounds(A: np.ndarray, b: np.ndarray, factor: np.ndarray, theta: np.ndarray,
                     work: np.ndarray, diag: np.ndarray, off: np.ndarray, alpha: float,
                     scale: float, normals: np.ndarray, tables: OutcomeTables) -> float:
    """Every round on pre-drawn tables with continuous noise: θ̃_t = θ̂_t + σ_t·z,
    σ_t = scale/λ_min(A_t), z = normals[t] standard normal; the last σ_t."""
    sigma = 0.0
    for t in range(tables.arms.shape[0]):
        sigma = scale / dgs_estimate(A, b, factor, theta, work, diag, off)
        noisy_into(theta, sigma, 0.0, normals[t], theta)
        i = dgs_arm(factor, theta, alpha, tables.arms[t])
        ridge_update(A, b, tables.arms[t, i], clip_reward(pull(tables, t, i)))
    return sigma


@jit
def dgs_exact_round(A: np.ndarray, b: np.ndarray, factor: np.ndarray, theta: np.ndarray,
                    work: np.ndarray, diag: np.ndarray, off: np.ndarray, alpha: float,
                    grid: float, z: np.ndarray, arms: np.ndarray, rewards: np.ndarray,
                    regrets: np.ndarray, regret: np.ndarray, reward: np.ndarray,
                    chosen: np.ndarray, t: int) -> float:
    """Round t on pre-drawn tables with exact noise drawn for it (θ̃_t = snap(θ̂_t, γ) + γ·z),
    then round t + 1's statistics (`dgs_estimate`): λ_min(A_{t+1})."""
    noisy_into(theta, grid, grid, z, theta)
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

    def __init__(self, problem: ProblemInfo, rng: np.random.Generator, **kwargs: Any) -> None:
        super().__init__(problem, rng, **kwargs)
        self.alpha = float(self.params["alpha"])
        self.rho = self.zcdp_setup()
        self.scale = math.sqrt(self.horizon / (2.0 * self.rho))
        self.releases = 0
        self.last_sigma = 0.0
        self.released_at = -1  # the round of the last release θ̃
        d = self.d
        self.factor_work = np.empty((d, d))  # L_t
        self.theta = np.zeros(d)  # θ̂_t, then the release θ̃_t
        self.eigen_work = (np.empty((d, d)), np.empty(d), np.empty(d))
        self.z = np.empty(d, dtype=np.int64)  # exact noise of one release

    def begin(self, env: Environment) -> None:
        super().begin(env)
        self.scale = math.sqrt(self.horizon / (2.0 * self.rho))
        self.releases = 0
        self.released_at = -1

    def estimate(self) -> float:
        """`dgs_estimate` of the current statistics: λ_min(A_t)."""
        return dgs_estimate(self.A, self.b, self.factor_work, self.theta, *self.eigen_work)

    def sigma_at(self, smallest: float) -> float:
        """σ_t = Δ_t·√(T/(2ρ)), Δ_t = 1/λ_min(A_t): as calibrated for continuous noise, raised
        for the grid of exact noise (strict)."""
        if not smallest > 0.0:  # NaN or a singular A: no finite sensitivity
            raise ConfigError(f"DGS-LinUCB: lambda_min(A_t) = {smallest!r}; the release's "
                              "sensitivity 1/lambda_min must be finite")
        if not self.noise.exact:
            return self.scale / smallest
        sensitivity = 1.0 / smallest
        return self.calibrate_release(sensitivity * self.scale, sensitivity)

    def exact_noise(self, sigma: float) -> tuple[float, np.ndarray]:
        """(γ, z) of an exact release at σ: its grid and d discrete Gaussian integers."""
        if sigma == 0:
            self.z[:] = 0
            return 0.0, self.z.astype(float)
        s, gamma = self.noise.integer_sigma(sigma)
        discrete_gaussian(self.noise_rng, s, out=self.z)
        return gamma, self.z.astype(float)

    def release(self, t: int) -> None:
        """Round t's release θ̃_t into `theta` (one per round)."""
        sigma = self.sigma_at(self.estimate())
        if self.noise.exact:
            gamma, z = self.exact_noise(sigma)
            noisy_into(self.theta, gamma, gamma, z, self.theta)
        else:
            noisy_into(self.theta, sigma, 0.0, self.noise_rng.standard_normal(self.d),
                       self.theta)
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
        """Continuous noise: every round compiled (`dgs_paper_rounds`). Exact noise: each
        round's noise drawn here, the round and the next round's statistics compiled
        (`dgs_exact_round`)."""
        horizon = len(tables.chosen)
        if not horizon:
            return
        if not self.noise.exact:
            self.last_sigma = dgs_paper_rounds(self.A, self.b, self.factor_work, self.theta,
                                               *self.eigen_work, self.alpha, self.scale,
                                               self.noise_rng.standard_normal((horizon, self.d)),
                                               tables)
            self.releases += horizon
            self.released_at = horizon - 1
            return
        smallest = self.estimate()
        for t in range(horizon):
            sigma = self.sigma_at(smallest)
            gamma, z = self.exact_noise(sigma)
            self.last_sigma = sigma
            self.released_at = t
            self.releases += 1
            smallest = dgs_exact_round(self.A, self.b, self.factor_work, self.theta,
                                       *self.eigen_work, self.alpha, gamma, z, *tables, t)

    def finish(self) -> None:
        """T releases of ρ/T each: sequential composition gives ρ (the ledger adds the ρ's)."""
        self.ledger.add("gaussian", "theta-hat every round", sensitivity=1.0 / self.lam,
                        noise_scale=self.last_sigma, rho=self.rho / self.horizon,
                        count=self.releases,
                        note=f"sensitivity 1/lambda_min(A_t) <= 1/lambda per round; noise "
                             f"multiplier sqrt(T/(2 rho)) = {self.scale:.6g}; noise_scale is "
                             f"the last sigma_t")

    def diagnostics(self) -> dict[str, float]:
        return {"rho": self.rho, "noise_multiplier": self.scale, "sigma_last": self.last_sigma}
