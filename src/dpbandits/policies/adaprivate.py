"""AdaPrivate-TS (+Amp, +Adaptive) and AdaPrivate-UCB: batched noisy increments of b.

A is built from public features every round and never noised; b changes only at batch ends by
s̃_k = Σ_{batch k} r_t x_t + N(0, σ²I), σ = 1/√(2ρ) (Amp: Poisson-subsampled increment with
σ_amp, then ÷q). Each reward is in exactly one increment, so the transcript is ρ-zCDP by
parallel composition (AdaPrivate-TS privacy proof, Steps 1–5; docs/ts.md, "AdaPrivate-TS").
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from dpbandits.audit.spec import PolicyAudit, reward_audit
from dpbandits.contract import OutcomeTables, ProblemInfo
from dpbandits.errors import ConfigError
from dpbandits.jit import jit
from dpbandits.linalg import add_outer, add_scaled, cho_solve, cholesky, solve_lower_t
from dpbandits.params import Declaration, Param, boolean, choice, integer, number, with_defaults
from dpbandits.policies.linear_core import (
    ALPHA,
    CONVERSION,
    LinearPolicy,
    ZCDPMixin,
    greedy_index,
    ucb_index,
)
from dpbandits.policies.tables import pull
from dpbandits.privacy.clipping import clip_reward
from dpbandits.privacy.release import Drawn, release
from dpbandits.privacy.subsampled import (
    EXTENDED_ORDERS,
    PAPER_ORDERS,
    amp_epsilon,
    amp_sigma,
    orders_capture,
)
from dpbandits.privacy.zcdp import gaussian_sigma

MEAN_GRAMS = ("batch_start", "current")
ORDER_SETS = ("paper", "extended", "auto")


@jit
def batch_mean(factor: np.ndarray, b: np.ndarray, theta: np.ndarray,
               current: bool) -> np.ndarray:
    """θ̂: A_τ⁻¹b of the batch start (`theta`, kept from the last release) or, with
    `mean_gram: current`, A_t⁻¹b from the factor of A_t."""
    return cho_solve(factor, b) if current else theta


@jit
def adaprivate_ts_arm(A: np.ndarray, b: np.ndarray, theta: np.ndarray, current: bool, v: float,
                      z: np.ndarray, arms: np.ndarray) -> int:
    """AdaPrivate-TS (paper Alg. 1): argmax_x xᵀθ̃_t, θ̃_t = θ̂ + v·L_t⁻ᵀz ~ N(θ̂, v²A_t⁻¹) for
    the round's standard normal z."""
    factor = cholesky(A)
    sample = solve_lower_t(factor, z)
    return greedy_index(arms, batch_mean(factor, b, theta, current) + v * sample)


@jit
def adaprivate_ucb_arm(A: np.ndarray, b: np.ndarray, theta: np.ndarray, current: bool,
                       alpha: float, arms: np.ndarray) -> int:
    """AdaPrivate-UCB: argmax_x xᵀθ̂ + α‖x‖_{A_t⁻¹}."""
    factor = cholesky(A)
    return ucb_index(arms, batch_mean(factor, b, theta, current), factor, alpha)


@jit
def batch_update(A: np.ndarray, s: np.ndarray, x: np.ndarray, r: float, included: bool) -> None:
    """A ← A + x xᵀ every round (public features); s ← s + r·x for a reward in the batch's
    increment (Amp: the rounds Poisson sampling kept)."""
    add_outer(A, x, 1.0)
    if included:
        add_scaled(s, x, r)


@jit
def adaprivate_ts_rounds(A: np.ndarray, b: np.ndarray, theta: np.ndarray, current: bool,
                         v: float, normals: np.ndarray, s: np.ndarray,
                         include: np.ndarray, start: int, tables: OutcomeTables, t: int,
                         stop: int) -> int:
    """Rounds t … stop − 1 of a batch that began at round `start`, on pre-drawn tables, round
    u's standard normal z in normals[u − t]: the number of rewards added to its increment s."""
    added = 0
    for u in range(t, stop):
        arms = tables.arms[u]
        i = adaprivate_ts_arm(A, b, theta, current, v, normals[u - t], arms)
        included = include[u - start]
        batch_update(A, s, arms[i], clip_reward(pull(tables, u, i)), included)
        added += included
    return added


@jit
def adaprivate_ucb_rounds(A: np.ndarray, b: np.ndarray, theta: np.ndarray, current: bool,
                          alpha: float, s: np.ndarray, include: np.ndarray, start: int,
                          tables: OutcomeTables, t: int, stop: int) -> int:
    """AdaPrivate-UCB's `adaprivate_ts_rounds`."""
    added = 0
    for u in range(t, stop):
        arms = tables.arms[u]
        i = adaprivate_ucb_arm(A, b, theta, current, alpha, arms)
        included = include[u - start]
        batch_update(A, s, arms[i], clip_reward(pull(tables, u, i)), included)
        added += included
    return added


class BatchedPrivatePolicy(ZCDPMixin, LinearPolicy):
    """Common mechanism of the AdaPrivate family; subclasses supply the action rule."""

    private = True
    # ℓ2 sensitivity of one reward's term r·x of a batch increment: r ∈ [0, 1], ‖x‖ ≤ 1
    # (AdaPrivate-TS privacy proof, Step 2).
    REWARD_SENSITIVITY: ClassVar[float] = 1.0
    release_name = "b batch increment"
    parameters: ClassVar[Declaration] = (
        *LinearPolicy.parameters,
        integer("B", 300, "batch length: b is released every B rounds", ge=1),
        choice("mean_gram", "batch_start", "θ̂ from the Gram matrix at the batch start or the "
               "current one", MEAN_GRAMS),
        CONVERSION,
        integer("group_size", 1, "user-level privacy for users with up to this many events",
                ge=1),
    )

    def __init__(self, problem: ProblemInfo, rng: np.random.Generator, **kwargs: Any) -> None:
        super().__init__(problem, rng, **kwargs)
        self.B = int(self.params["B"])
        self.group_size = int(self.params["group_size"])
        # Group privacy (docs/ts.md, "Group privacy"): k events of one user cost k²ρ, so each
        # event gets ρ/k².
        self.rho = self.zcdp_setup() / self.group_size**2
        self.sigma = gaussian_sigma(self.REWARD_SENSITIVITY, self.rho)
        self.q: float | None = None
        self._amp_costs: dict[float, float] = {}
        self.privacy_setup()
        self.sigma = self.calibrate_release(self.sigma, self.REWARD_SENSITIVITY)
        self.sigma_effective = self.sigma if self.q is None else (
            self.sigma / self.q if self.params.get("amp_rescale", True) else self.sigma)
        self.action_setup()
        self.reset()

    def privacy_setup(self) -> None:
        """Subclass hook: replace σ by the subsampled calibration (Amp)."""

    def action_setup(self) -> None:
        """Subclass hook: exploration parameters that depend on σ."""

    def setup(self) -> None:
        if not hasattr(self, "sigma_effective"):
            return
        self.mean_current = self.params["mean_gram"] == "current"
        self.batch = 0
        self.batch_start = 0
        self.s = np.zeros(self.d)
        self.in_batch = 0
        self.theta_hat = self.ridge_mean()  # θ̂ = A_τ⁻¹b at the batch start
        self.batch_ends: list[int] = []
        self.batch_counts: list[int] = []
        self.noise_total = np.zeros(self.d)
        self.draw_inclusion()

    def draw_inclusion(self) -> None:
        """Which rounds of the next batch enter its increment: all, or Poisson(q) (Amp)."""
        if self.q is None:
            self.include = np.ones(self.B, dtype=np.bool_)
        else:
            self.include = self.sample_rng.random(self.B) < self.q

    def observe(self, t: int, x: np.ndarray, r: float) -> None:
        included = bool(self.include[t - self.batch_start])
        batch_update(self.A, self.s, x, r, included)
        self.in_batch += included
        if t - self.batch_start + 1 == self.B or t == self.horizon - 1:
            self.release(t)

    def table_rounds(self, tables: OutcomeTables, t: int, stop: int) -> int:
        """Rounds t … stop − 1 of the open batch in compiled code: the rewards added."""
        raise NotImplementedError

    def play_table(self, tables: OutcomeTables) -> None:
        """Each batch's rounds by `table_rounds`, its release here as in `observe`."""
        t = 0
        while t < self.horizon:
            stop = min(self.batch_start + self.B, self.horizon)
            self.in_batch += self.table_rounds(tables, t, stop)
            t = stop
            self.release(t - 1)

    def release(self, t: int) -> None:
        """Release s̃_k = s_k + N(0, σ²I) and fold it into b (÷q for Amp); start the next batch."""
        released = release(
            self.noise, self.ledger, self.s, name=self.release_name, mechanism="gaussian",
            sensitivity=self.group_size * self.REWARD_SENSITIVITY, scale=self.sigma,
            partition=f"batch {self.batch + 1}", note=self.release_note(t),
            **self.release_accounting())
        noise = released - self.s
        if self.q is not None and self.params.get("amp_rescale", True):
            released = released / self.q
            noise = noise / self.q
        self.b = self.b + released
        self.noise_total += noise
        self.batch_ends.append(t + 1)
        self.batch_counts.append(self.in_batch)
        self.batch += 1
        self.batch_start = t + 1
        self.s = np.zeros(self.d)
        self.in_batch = 0
        self.theta_hat = self.ridge_mean()
        self.draw_inclusion()

    def release_note(self, t: int) -> str:
        """The ledger note of the batch ending at round t."""
        k = self.group_size
        note = f"batch {self.batch + 1}: rounds {self.batch_start + 1}-{t + 1}"
        if k > 1:
            note += (f"; user level: up to {k} events of one user cost at most {k}^2 x the "
                     "per-event rho in all (sum of squares <= square of the sum)")
        return note

    def release_accounting(self) -> dict[str, Any]:
        """How the ledger prices a batch release: ρ = Δ'²/(2σ²) of the σ drawn (parallel
        composition over batches, AdaPrivate-TS Thm. 1)."""
        return {}

    def events(self) -> dict[str, np.ndarray]:
        """The batch ends (public), and the rewards in each increment unless Poisson sampling
        chose them (Amp): that count would reveal the secret sample (docs/ts.md,
        "AdaPrivate-TS-Amp and the subsampled Gaussian")."""
        out = {"batch_end": np.asarray(self.batch_ends, dtype=np.int64)}
        if self.q is None:
            out["batch_rewards"] = np.asarray(self.batch_counts, dtype=np.int64)
        return out

    def diagnostics(self) -> dict[str, float]:
        return {"rho": self.rho, "sigma": self.sigma, "sigma_effective": self.sigma_effective,
                "n_releases": float(len(self.batch_ends)), "B": float(self.B),
                "group_size": float(self.group_size)}


class AdaPrivateTSBase(BatchedPrivatePolicy):
    """TS action rule θ̃_t = θ̂ + ξ_t, ξ_t ~ N(0, v_t²A_t⁻¹) drawn afresh (paper Alg. 1)."""

    parameters: ClassVar[Declaration] = (
        *BatchedPrivatePolicy.parameters,
        number("v", 1.0, "exploration scale v", gt=0),
        number("q", None, "Poisson subsampling rate of the Amp variant (null: none)", gt=0,
               le=1, nullable=True),
        boolean("amp_rescale", True, "Amp: divide the released increment by q"),
        choice("orders", "paper", "RDP orders: paper {2..6, 8, 16, 32, 64}, extended (+128, "
               "256), auto (extended when the paper's cannot reach ε)", ORDER_SETS),
        Param("v0", None, "adaptive exploration v_k = v₀γ^(k−1): null (off), a number > 0, or "
              "'tuned' (1 + σ/(d√λ₀))", ("null", "number", "string"), gt=0,
              choices=("tuned",)),
        number("gamma", 0.95, "decay γ of the adaptive exploration", gt=0, le=1),
        number("lambda0", None, "λ₀ of the tuned v₀ (null: 1/d)", gt=0, nullable=True),
    )

    def privacy_setup(self) -> None:
        q = self.params["q"]
        self.orders_extended = False
        if q is None:
            return
        if self.group_size != 1:
            raise ConfigError(f"group_size = {self.group_size} is not allowed with q = {q}; "
                              "must be 1 (group privacy is implemented for zCDP releases)")
        self.q = float(q)
        self.relation = "replace_one" if self.accounting == "strict" else "add_remove"
        orders = EXTENDED_ORDERS if self.params["orders"] == "extended" else PAPER_ORDERS
        try:
            sigma, self.alpha_star = self._calibrate(orders)
        except ConfigError:
            if self.params["orders"] != "auto":
                raise
            orders = EXTENDED_ORDERS
            self.orders_extended = True
            sigma, self.alpha_star = self._calibrate(orders)
        self.orders_used = orders
        self.sigma_unit = sigma
        self.release_name = "b batch increment (÷q after noise)"
        self.sigma = sigma * self.REWARD_SENSITIVITY  # σ_amp is calibrated for Δ = 1

    def _calibrate(self, orders: tuple[int, ...]) -> tuple[float, int]:
        return amp_sigma(self.q, float(self.epsilon), float(self.delta), orders=orders,
                         relation=self.relation, conversion=self.params["conversion"])

    def action_setup(self) -> None:
        lambda0 = self.params["lambda0"]
        if lambda0 is None:
            lambda0 = 1.0 / self.d
        self.lambda0 = float(lambda0)
        v0 = self.params["v0"]
        if v0 == "tuned":
            v0 = 1.0 + self.sigma_effective / (self.d * math.sqrt(self.lambda0))
        self.v0 = None if v0 is None else float(v0)
        self.gamma = float(self.params["gamma"])

    def exploration_scale(self) -> float:
        """v (base) or v_k = v₀γ^{k−1} with k the 1-based batch index."""
        if self.v0 is None:
            return float(self.params["v"])
        return self.v0 * self.gamma ** self.batch

    def setup(self) -> None:
        super().setup()
        if hasattr(self, "sigma_effective"):
            self.v_now = self.exploration_scale()

    def release(self, t: int) -> None:
        super().release(t)
        self.v_now = self.exploration_scale()

    def choose(self, t: int, arms: np.ndarray) -> int:
        return adaprivate_ts_arm(self.A, self.b, self.theta_hat, self.mean_current, self.v_now,
                                 self.explore_rng.standard_normal(self.d), arms)

    def table_rounds(self, tables: OutcomeTables, t: int, stop: int) -> int:
        normals = self.explore_rng.standard_normal((stop - t, self.d))
        return adaprivate_ts_rounds(self.A, self.b, self.theta_hat, self.mean_current,
                                    self.v_now, normals, self.s, self.include,
                                    self.batch_start, tables, t, stop)

    def release_accounting(self) -> dict[str, Any]:
        """Amp: the (ε, δ) of the Poisson-subsampled Gaussian (paper Eq. (15)) at the σ drawn,
        per unit of the snapped release's sensitivity."""
        if self.q is None:
            return {}
        return {"ledger_mechanism": "poisson-subsampled-gaussian", "cost": self.amp_cost}

    def release_note(self, t: int) -> str:
        note = super().release_note(t)
        if self.q is None:
            return note
        return (f"{note}; q={self.q}; RDP orders <= {max(self.orders_used)}, "
                f"alpha*={self.alpha_star}; {self.relation}")

    def amp_cost(self, drawn: Drawn) -> dict[str, float]:
        """(ε, δ) of one subsampled release whose noise was drawn at σ for sensitivity Δ'."""
        key = drawn.scale / drawn.sensitivity
        if key not in self._amp_costs:
            self._amp_costs[key] = amp_epsilon(
                self.q, key, self.delta, orders=self.orders_used, relation=self.relation,
                conversion=self.params["conversion"])[0]
        return {"epsilon": self._amp_costs[key], "delta": self.delta}

    def diagnostics(self) -> dict[str, float]:
        out = super().diagnostics()
        out["v_last"] = self.exploration_scale()
        if self.v0 is not None:
            out["v0"] = self.v0
        if self.q is not None:
            capture, alpha_dense = orders_capture(self.q, self.sigma_unit, float(self.delta),
                                                  relation=self.relation,
                                                  conversion=self.params["conversion"])
            out.update(q=self.q, alpha_star=float(self.alpha_star),
                       orders_extended=float(self.orders_extended), rdp_capture=capture,
                       alpha_star_dense=float(alpha_dense))
        return out


class AdaPrivateTS(AdaPrivateTSBase):
    """AdaPrivate-TS, base variant: v fixed, no subsampling (the paper's Algorithm 1)."""

    name = "AdaPrivate-TS"
    plays_tables = True
    decision_rule = staticmethod(adaprivate_ts_arm)
    update_rule = staticmethod(batch_update)
    audits: ClassVar[tuple[PolicyAudit, ...]] = (reward_audit(name, params={"B": 10}),)


class AdaPrivateTSAmp(AdaPrivateTSBase):
    """AdaPrivate-TS-Amp: Poisson subsampling at rate q, σ_amp by RDP (paper Eq. (15))."""

    name = "AdaPrivate-TS-Amp"
    plays_tables = True
    decision_rule = staticmethod(adaprivate_ts_arm)
    update_rule = staticmethod(batch_update)
    audits: ClassVar[tuple[PolicyAudit, ...]] = (reward_audit(name, params={"B": 10}),)
    parameters: ClassVar[Declaration] = with_defaults(AdaPrivateTSBase.parameters, q=0.3)


class AdaPrivateTSAdaptive(AdaPrivateTSBase):
    """AdaPrivate-TS-Adaptive: v_k = v₀γ^{k−1} (v₀ = 1.5, γ = 0.95; `v0: tuned`)."""

    name = "AdaPrivate-TS-Adaptive"
    plays_tables = True
    decision_rule = staticmethod(adaprivate_ts_arm)
    update_rule = staticmethod(batch_update)
    audits: ClassVar[tuple[PolicyAudit, ...]] = (reward_audit(name, params={"B": 10}),)
    parameters: ClassVar[Declaration] = with_defaults(AdaPrivateTSBase.parameters, v0=1.5)


class AdaPrivateUCB(BatchedPrivatePolicy):
    """AdaPrivate-UCB: same statistics, score xᵀθ̂ + α‖x‖_{A_t⁻¹} (docs/ts.md, "AdaPrivate-UCB")."""

    name = "AdaPrivate-UCB"
    plays_tables = True
    decision_rule = staticmethod(adaprivate_ucb_arm)
    update_rule = staticmethod(batch_update)
    audits: ClassVar[tuple[PolicyAudit, ...]] = (reward_audit(name, params={"B": 10}),)
    parameters: ClassVar[Declaration] = (*BatchedPrivatePolicy.parameters, ALPHA)

    def action_setup(self) -> None:
        self.alpha = float(self.params["alpha"])

    def choose(self, t: int, arms: np.ndarray) -> int:
        return adaprivate_ucb_arm(self.A, self.b, self.theta_hat, self.mean_current, self.alpha,
                                  arms)

    def table_rounds(self, tables: OutcomeTables, t: int, stop: int) -> int:
        return adaprivate_ucb_rounds(self.A, self.b, self.theta_hat, self.mean_current,
                                     self.alpha, self.s, self.include, self.batch_start,
                                     tables, t, stop)
