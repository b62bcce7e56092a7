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
from dpbandits.linalg import cho_solve, lambda_min
from dpbandits.params import Declaration
from dpbandits.policies.linear_core import (
    ALPHA,
    CONVERSION,
    LinearPolicy,
    ZCDPMixin,
    add_reward,
    ucb_index,
)
from dpbandits.policies.ridge_rounds import finish_round, play_dgs


class DGSLinUCB(ZCDPMixin, LinearPolicy):
    """Per-step θ̂-perturbation, score xᵀθ̃_t + α‖x‖_{A_t⁻¹}."""

    name = "DGS-LinUCB"
    plays_tables = True
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
        self.released: tuple[int, np.ndarray] | None = None
        self.theta_work = np.zeros(self.d)  # the compiled rounds' θ̃_t

    def begin(self, env: Environment) -> None:
        super().begin(env)
        self.scale = math.sqrt(self.horizon / (2.0 * self.rho))
        self.releases = 0
        self.released = None

    def sigma_at(self) -> float:
        """σ_t = √(T/(2ρ))/λ_min(A_t)."""
        return self.scale / lambda_min(self.A)

    def choose(self, t: int, arms: np.ndarray) -> int:
        """One release per round t: a replay asking again at the same t reuses θ̃_t."""
        factor = self.factor()
        if self.released is None or self.released[0] != t:
            theta_hat = cho_solve(factor, self.b)
            if self.noise.exact:
                sensitivity = 1.0 / lambda_min(self.A)
                self.last_sigma = self.calibrate_release(sensitivity * self.scale, sensitivity)
                noisy = self.gaussian_release(theta_hat, self.last_sigma)
            else:
                self.last_sigma = self.sigma_at()
                noisy = theta_hat + self.last_sigma * self.noise_normals.next()
            self.released = (t, noisy)
            self.releases += 1
        theta = self.released[1]
        return ucb_index(arms, theta, factor, self.alpha)

    def play_table(self, tables: OutcomeTables) -> None:
        """The rounds with their releases in compiled code (`ridge_rounds.play_dgs`); a round it
        leaves to the policy is played here as `choose` and `observe` play it."""
        t = 0
        while t < self.horizon:
            t, python_round = play_dgs(self, tables, t)
            if python_round:
                finish_round(self, tables, t, self.select(t, tables.arms[t]))
                t += 1

    def observe(self, t: int, x: np.ndarray, r: float) -> None:
        self.add_to_gram(x)
        add_reward(self.b, x, r)

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
