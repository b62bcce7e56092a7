"""Episode-based zCDP baselines after Azize & Basu (SaTML 2024); the episode rules are ours.

zCDP-Episodic releases a noisy θ̂ of the last episode only (forgetting); RarelySwitching-zCDP and
AdaC-OFUL-zCDP release noisy increments of b at log-det switches and freeze the policy between
switches. Every reward enters one release, so the total is ρ by parallel composition.
Rules and ledgers: docs/ts.md, "zCDP-Episodic", "RarelySwitching-zCDP and AdaC-OFUL-zCDP".
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from scipy.linalg import blas

from dpbandits.audit.spec import PolicyAudit, reward_audit
from dpbandits.contract import ProblemInfo
from dpbandits.linalg import cho_solve, cholesky, lambda_min, log_det, widths
from dpbandits.params import Declaration, number
from dpbandits.policies.linear_core import ALPHA, CONVERSION, LinearPolicy, ZCDPMixin
from dpbandits.privacy.zcdp import gaussian_sigma


class _EpisodeBase(ZCDPMixin, LinearPolicy):
    private = True

    def __init__(self, problem: ProblemInfo, rng: np.random.Generator, **kwargs: Any) -> None:
        super().__init__(problem, rng, **kwargs)
        self.alpha = float(self.params["alpha"])
        self.rho = self.zcdp_setup()
        self.ready = True
        self.reset()

    def setup(self) -> None:
        if not getattr(self, "ready", False):
            return
        self.log_det_tau = self.d * math.log(self.lam)
        self.tau = 0
        self.switches: list[int] = []
        self.release_rewards: list[int] = []
        self.in_episode = 0
        self.episode_setup()

    def episode_setup(self) -> None:
        """Subclass state at the start of a run."""

    def events(self) -> dict[str, np.ndarray]:
        return {"switch": np.asarray(self.switches, dtype=np.int64),
                "release_rewards": np.asarray(self.release_rewards, dtype=np.int64)}

    def diagnostics(self) -> dict[str, float]:
        return {"rho": self.rho, "n_switches": float(len(self.switches))}


class ZCDPEpisodic(_EpisodeBase):
    """θ̂-perturbation with forgetting; new episode when ln det A_t − ln det A_τ > ln c.

    At a switch θ̃ = (A^(ℓ))⁻¹b^(ℓ) + N(0, σ_θ²I) from the ended episode's data only, with
    Δ_θ = 1/λ_min(A^(ℓ)) and σ_θ = Δ_θ/√(2ρ); act with xᵀθ̃ + α‖x‖_{A_t⁻¹}.
    """

    name = "zCDP-Episodic"
    audits: ClassVar[tuple[PolicyAudit, ...]] = (reward_audit(name),)
    parameters: ClassVar[Declaration] = (
        *LinearPolicy.parameters, ALPHA,
        number("c_trigger", 2.0, "new episode when ln det A_t − ln det A_τ > ln c", ge=1),
        CONVERSION,
    )

    def episode_setup(self) -> None:
        self.log_c = math.log(float(self.params["c_trigger"]))
        self.theta_tilde = self.theta0.copy()
        self.A_ep = np.asfortranarray(self.lam * np.eye(self.d))
        self.b_ep = self.lam * self.theta0
        self.sigmas: list[float] = []
        self.sensitivities: list[float] = []

    def choose(self, t: int, arms: np.ndarray) -> int:
        factor = cholesky(self.A)
        current = log_det(factor)
        if self.in_episode > 0 and current - self.log_det_tau > self.log_c:
            self.switch(t)
            self.log_det_tau = current
        return int((arms @ self.theta_tilde + self.alpha * widths(factor, arms)).argmax())

    def switch(self, t: int) -> None:
        """Release the ended episode's noisy estimate and forget its data."""
        theta_hat = cho_solve(cholesky(self.A_ep), self.b_ep)
        sensitivity = 1.0 / lambda_min(self.A_ep)
        sigma = self.calibrate_release(gaussian_sigma(sensitivity, self.rho), sensitivity)
        self.theta_tilde = self.gaussian_release(theta_hat, sigma)
        self.sensitivities.append(sensitivity)
        episode = len(self.switches) + 1
        self.ledger.add("gaussian", "theta-hat of one episode", sensitivity=sensitivity,
                        noise_scale=sigma, rho=self.rho, partition=f"episode {episode}",
                        note=f"released at round {t + 1}; sensitivity 1/lambda_min(A_episode), "
                             "sigma = sensitivity/sqrt(2 rho); the episode's data are then "
                             "forgotten")
        self.switches.append(t)
        self.release_rewards.append(self.in_episode)
        self.sigmas.append(sigma)
        self.tau = t
        self.in_episode = 0
        self.A_ep = np.asfortranarray(self.lam * np.eye(self.d))
        self.b_ep = self.lam * self.theta0

    def observe(self, t: int, x: np.ndarray, r: float) -> None:
        self.add_to_gram(x)
        blas.dsyr(1.0, x, lower=1, a=self.A_ep, overwrite_a=1)  # lower triangle is read
        self.b_ep = self.b_ep + r * x
        self.in_episode += 1

    def events(self) -> dict[str, np.ndarray]:
        out = super().events()
        out["sensitivity"] = np.asarray(self.sensitivities, dtype=float)
        return out

    def diagnostics(self) -> dict[str, float]:
        out = super().diagnostics()
        if self.sigmas:
            out.update(sigma_first=self.sigmas[0], sigma_last=self.sigmas[-1])
        return out


class _SwitchingIncrement(_EpisodeBase):
    """Noisy b increments at switches ln det A_t − ln det A_τ > ln(1 + C); frozen policy."""

    parameters: ClassVar[Declaration] = (
        *LinearPolicy.parameters, ALPHA,
        number("C", 1.0, "switch when ln det A_t − ln det A_τ > ln(1 + C)", gt=0),
        CONVERSION,
    )

    def episode_setup(self) -> None:
        self.log_c = math.log1p(float(self.params["C"]))
        self.sigma = self.calibrate_release(gaussian_sigma(1.0, self.rho), 1.0)
        self.s = np.zeros(self.d)
        self.factor_tau = cholesky(self.A)
        self.theta_tilde = cho_solve(self.factor_tau, self.b)
        self.width_scale = self.alpha * self.confidence(0)

    def confidence(self, n_tau: int) -> float:
        """Multiplier of ‖x‖_{A_τ⁻¹} (before α)."""
        return 1.0

    def choose(self, t: int, arms: np.ndarray) -> int:
        factor = cholesky(self.A)
        current = log_det(factor)
        if self.in_episode > 0 and current - self.log_det_tau > self.log_c:
            self.switch(t, factor)
            self.log_det_tau = current
        return int((arms @ self.theta_tilde
                    + self.width_scale * widths(self.factor_tau, arms)).argmax())

    def switch(self, t: int, factor: np.ndarray) -> None:
        """b ← b + Σ_{episode} r x + N(0, σ²I); A_τ ← A_t; θ̃ = A_τ⁻¹b."""
        if self.noise.exact:
            self.b = self.b + self.gaussian_release(self.s, self.sigma)
        else:
            self.b = self.b + self.s + self.sigma * self.noise_rng.standard_normal(self.d)
        episode = len(self.switches) + 1
        self.ledger.add("gaussian", "b episode increment", sensitivity=1.0,
                        noise_scale=self.sigma, rho=self.rho, partition=f"episode {episode}",
                        note=f"rounds {self.tau + 1}-{t}; each reward is in one increment")
        self.switches.append(t)
        self.release_rewards.append(self.in_episode)
        self.tau = t
        self.in_episode = 0
        self.s = np.zeros(self.d)
        self.factor_tau = factor
        self.theta_tilde = cho_solve(factor, self.b)
        self.width_scale = self.alpha * self.confidence(t)

    def observe(self, t: int, x: np.ndarray, r: float) -> None:
        self.add_to_gram(x)
        self.s += r * x
        self.in_episode += 1

    def diagnostics(self) -> dict[str, float]:
        out = super().diagnostics()
        out["sigma"] = self.sigma
        return out


class RarelySwitchingZCDP(_SwitchingIncrement):
    """RarelySwitching-zCDP: frozen score xᵀθ̃ + α‖x‖_{A_τ⁻¹}."""

    name = "RarelySwitching-zCDP"
    audits: ClassVar[tuple[PolicyAudit, ...]] = (reward_audit(name),)


class AdaCOFULZCDP(_SwitchingIncrement):
    """AdaC-OFUL-zCDP: width α(β_OFUL + β_priv) at the last switch."""

    name = "AdaC-OFUL-zCDP"
    audits: ClassVar[tuple[PolicyAudit, ...]] = (reward_audit(name),)
    parameters: ClassVar[Declaration] = (
        *_SwitchingIncrement.parameters,
        number("R_sigma", 0.5, "sub-Gaussian scale R of the rewards in β_OFUL", ge=0),
        number("delta_r", 0.05, "failure probability δ_r of the confidence widths", gt=0, le=1),
        number("S_bound", 1.0, "bound S on ‖θ*‖ in β_OFUL", ge=0),
    )

    def confidence(self, n_tau: int) -> float:
        """β_OFUL = R√(2 ln(1/δ_r) + d ln(1 + n/(dλ))) + √λ S; β_priv = σ√ℓ(√d + √(2 ln(1/δ_r)))
        /√λ_min(A_τ)."""
        log_term = 2.0 * math.log(1.0 / float(self.params["delta_r"]))
        beta_oful = (float(self.params["R_sigma"])
                     * math.sqrt(log_term + self.d * math.log1p(n_tau / (self.d * self.lam)))
                     + math.sqrt(self.lam) * float(self.params["S_bound"]))
        releases = len(self.switches)
        beta_priv = 0.0
        if releases:
            beta_priv = (self.sigma * math.sqrt(releases)
                         * (math.sqrt(self.d) + math.sqrt(log_term))
                         / math.sqrt(lambda_min(self.A)))
        return beta_oful + beta_priv
