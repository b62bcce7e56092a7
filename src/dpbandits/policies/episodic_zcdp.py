"""Episode-based zCDP baselines after Azize & Basu (SaTML 2024); the episode rules are ours.

zCDP-Episodic releases a noisy θ̂ of the last episode only (forgetting); RarelySwitching-zCDP and
AdaC-OFUL-zCDP release noisy increments of b at log-det switches and freeze the policy between
switches. Every reward enters one release, so the total is ρ by parallel composition.
Rules and ledgers: docs/ts.md, "zCDP-Episodic", "RarelySwitching-zCDP and AdaC-OFUL-zCDP".

Between switches the frozen policies skip the log-det test while a rigorous upper bound on
ln det A_t − ln det A_τ (matrix determinant lemma, Σ ln(1 + ‖x_s‖²_{A_τ⁻¹}), less a margin far
above the rounding of either side) is below ln(1 + C); the switch times are those of testing
every round, bit for bit. On pre-drawn tables all three play their rounds in compiled code
(`ridge_rounds`) and make each switch here.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from dpbandits.audit.spec import PolicyAudit, reward_audit
from dpbandits.contract import OutcomeTables, ProblemInfo
from dpbandits.linalg import cho_solve, cholesky, lambda_min, log_det
from dpbandits.params import Declaration, number
from dpbandits.policies.linear_core import (
    ALPHA,
    CONVERSION,
    MEMO_SIZE,
    LinearPolicy,
    ZCDPMixin,
    add_reward,
    ucb_index,
)
from dpbandits.policies.ridge_rounds import play_episodic, play_switching
from dpbandits.privacy.zcdp import gaussian_sigma
from dpbandits.scipy_kernels import blas

_dsyr, _dtrsv = blas.dsyr, blas.dtrsv


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

    def switch_if_due(self, t: int) -> bool:
        """Round t's switch test of `choose`, and the switch if it passes."""
        raise NotImplementedError

    def compiled_rounds(self, tables: OutcomeTables, t: int) -> tuple[int, bool]:
        """Rounds t, t + 1, … in compiled code (`ridge_rounds`) up to the horizon or the round
        before which a switch is due: (that round, whether a switch is due)."""
        raise NotImplementedError

    def play_table(self, tables: OutcomeTables) -> None:
        """The rounds between switches by `compiled_rounds`, each switch here as in `choose`."""
        t = 0
        while t < self.horizon:
            t, due = self.compiled_rounds(tables, t)
            if due and not self.switch_if_due(t):
                raise RuntimeError(f"round {t + 1}: the compiled and the Python switch tests "
                                   "disagree")

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
    plays_tables = True
    audits: ClassVar[tuple[PolicyAudit, ...]] = (reward_audit(name),)
    parameters: ClassVar[Declaration] = (
        *LinearPolicy.parameters, ALPHA,
        number("c_trigger", 2.0, "new episode when ln det A_t − ln det A_τ > ln c", ge=1),
        CONVERSION,
    )

    def episode_setup(self) -> None:
        self.log_c = math.log(float(self.params["c_trigger"]))
        self.theta_tilde = self.theta0.copy()
        self.A_start = np.asfortranarray(self.lam * np.eye(self.d))
        self.b_start = self.lam * self.theta0
        self.A_ep = self.A_start.copy(order="F")
        self.b_ep = self.b_start.copy()
        self.sigmas: list[float] = []
        self.sensitivities: list[float] = []
        self.episode_memo: dict[bytes, tuple[np.ndarray, float, float]] = {}

    def choose(self, t: int, arms: np.ndarray) -> int:
        self.switch_if_due(t)
        return ucb_index(arms, self.theta_tilde, self.factor(), self.alpha)

    def switch_if_due(self, t: int) -> bool:
        """A new episode when ln det A_t − ln det A_τ > ln c (and the episode has data)."""
        if self.in_episode > 0:
            current = log_det(self.factor())
            if current - self.log_det_tau > self.log_c:
                self.switch(t)
                self.log_det_tau = current
                return True
        return False

    def compiled_rounds(self, tables: OutcomeTables, t: int) -> tuple[int, bool]:
        return play_episodic(self, tables, t)

    def episode_estimate(self) -> tuple[np.ndarray, float, float]:
        """(θ̂^(ℓ), Δ_θ, σ_θ), a function of (A^(ℓ), b^(ℓ)) alone, remembered by their bytes."""
        # One-sample episodes (c_trigger = 1) repeat: the arms come from a finite pool.
        key = self.A_ep.tobytes() + self.b_ep.tobytes()
        found = self.episode_memo.get(key)
        if found is None:
            theta_hat = cho_solve(cholesky(self.A_ep), self.b_ep)
            sensitivity = 1.0 / lambda_min(self.A_ep)
            sigma = self.calibrate_release(gaussian_sigma(sensitivity, self.rho), sensitivity)
            if len(self.episode_memo) >= MEMO_SIZE:
                self.episode_memo.clear()
            found = self.episode_memo[key] = (theta_hat, sensitivity, sigma)
        return found

    def switch(self, t: int) -> None:
        """Release the ended episode's noisy estimate and forget its data."""
        theta_hat, sensitivity, sigma = self.episode_estimate()
        self.theta_tilde = self.gaussian_release(theta_hat, sigma)
        self.record_switch(t, self.in_episode, sensitivity, sigma)
        self.in_episode = 0
        self.A_ep = self.A_start.copy(order="F")
        self.b_ep = self.b_start.copy()

    def record_switch(self, t: int, rewards: int, sensitivity: float, sigma: float) -> None:
        """The ledger entry and the records of the release at round t (`switch`, or the
        compiled rounds' own) of an episode of `rewards` rewards."""
        self.sensitivities.append(sensitivity)
        episode = len(self.switches) + 1
        self.ledger.add("gaussian", "theta-hat of one episode", sensitivity=sensitivity,
                        noise_scale=sigma, rho=self.rho, partition=f"episode {episode}",
                        note=f"released at round {t + 1}; sensitivity 1/lambda_min(A_episode), "
                             "sigma = sensitivity/sqrt(2 rho); the episode's data are then "
                             "forgotten")
        self.switches.append(t)
        self.release_rewards.append(rewards)
        self.sigmas.append(sigma)
        self.tau = t

    def observe(self, t: int, x: np.ndarray, r: float) -> None:
        self.add_to_gram(x)
        _dsyr(1.0, x, 1, 1, 0, len(x), self.A_ep, 1)  # lower triangle is read
        add_reward(self.b_ep, x, r)
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
        self.factor_tau = self.factor()
        self.theta_tilde = cho_solve(self.factor_tau, self.b)
        self.width_scale = self.alpha * self.confidence(0)
        self.growth_bound = 0.0  # ≥ ln det A_t − ln det A_τ (matrix determinant lemma)
        self.mass = 0.0  # Σ ‖x‖², so tr A = dλ + mass

    def confidence(self, n_tau: int) -> float:
        """Multiplier of ‖x‖_{A_τ⁻¹} (before α)."""
        return 1.0

    def margin(self) -> float:
        """Bound on the rounding of growth_bound and of ln det A_t − ln det A_τ as computed."""
        # A few thousand times d²(d + n)·u·κ: κ ≤ tr A/λ, n rank-one updates since the switch.
        kappa = (self.d * self.lam + self.mass) / self.lam
        return 1e-6 + 2.0**-40 * self.d**2 * (self.d + self.in_episode) * kappa

    def choose(self, t: int, arms: np.ndarray) -> int:
        self.switch_if_due(t)
        return ucb_index(arms, self.theta_tilde, self.factor_tau, self.width_scale)

    def switch_if_due(self, t: int) -> bool:
        """Switch when ln det A_t − ln det A_τ > ln(1 + C), tested only once the growth bound
        is within the margin of ln(1 + C)."""
        if self.in_episode > 0 and self.growth_bound > self.log_c - self.margin():
            factor = self.factor()
            current = log_det(factor)
            if current - self.log_det_tau > self.log_c:
                self.switch(t, factor)
                self.log_det_tau = current
                return True
        return False

    def compiled_rounds(self, tables: OutcomeTables, t: int) -> tuple[int, bool]:
        return play_switching(self, tables, t)

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
        self.growth_bound = 0.0

    def observe(self, t: int, x: np.ndarray, r: float) -> None:
        self.add_to_gram(x)
        add_reward(self.s, x, r)
        self.in_episode += 1
        y = _dtrsv(self.factor_tau, x, 1, 0, 1)  # L_τ⁻¹x
        self.growth_bound += math.log1p(float(y @ y))
        self.mass += float(x @ x)

    def diagnostics(self) -> dict[str, float]:
        out = super().diagnostics()
        out["sigma"] = self.sigma
        return out


class RarelySwitchingZCDP(_SwitchingIncrement):
    """RarelySwitching-zCDP: frozen score xᵀθ̃ + α‖x‖_{A_τ⁻¹}."""

    name = "RarelySwitching-zCDP"
    plays_tables = True
    audits: ClassVar[tuple[PolicyAudit, ...]] = (reward_audit(name),)


class AdaCOFULZCDP(_SwitchingIncrement):
    """AdaC-OFUL-zCDP: width α(β_OFUL + β_priv) at the last switch."""

    name = "AdaC-OFUL-zCDP"
    plays_tables = True
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
