"""Shared machinery of the AdaPrivate-TS paper's linear policies (docs/ts.md, "Shared machinery").

Ridge statistics A = λI + Σ x xᵀ (lower triangle kept, rank-one BLAS updates) and b = λθ₀ + …;
every round A is factorised afresh (A = LLᵀ, O(d³/3), no inverse formed), so TS draws
ξ = v·L⁻ᵀz ~ N(0, v²A⁻¹) and widths ‖x‖_{A⁻¹} = ‖L⁻¹x‖ cost a triangular solve each.
Features are clipped to the unit ball and rewards to [0, 1] before any statistic uses them.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from scipy.linalg import blas

from dpbandits.contract import Environment, ProblemInfo
from dpbandits.errors import ConfigError
from dpbandits.linalg import symmetric
from dpbandits.params import Declaration, Param, choice, number
from dpbandits.policies.base import Policy
from dpbandits.privacy.clipping import clip_arms, clip_reward, clip_table
from dpbandits.privacy.exact_noise import inflate_for_snapping, noise_for
from dpbandits.privacy.zcdp import rho_from_epsilon, rho_from_epsilon_tight

ZCDP_CONVERSIONS = ("classic", "tight")


class AnyFamily(tuple):
    """Reward families a link-free linear policy accepts: every one (rewards are clipped)."""

    def __contains__(self, item: object) -> bool:
        return isinstance(item, str)


ANY_FAMILY = AnyFamily(("any",))


class NormalStream:
    """Standard normal vectors of length d from one generator, drawn in blocks.

    A block of shape (m, d) holds the same numbers as m successive draws of size d, so the
    stream equals drawing one vector per call; it is only cheaper.
    """

    def __init__(self, rng: np.random.Generator, d: int, block: int) -> None:
        self.rng, self.d, self.block = rng, d, max(1, int(block))
        self.table = np.empty((0, d))
        self.i = 0

    def next(self) -> np.ndarray:
        if self.i >= len(self.table):
            self.table = self.rng.standard_normal((self.block, self.d))
            self.i = 0
        row = self.table[self.i]
        self.i += 1
        return row


def zcdp_rho(epsilon: float, delta: float, conversion: str) -> float:
    """ρ for a target (ε, δ): classic inverse (paper Eq. (2.8)) or dp-accounting's tight one."""
    if conversion == "tight":
        return rho_from_epsilon_tight(epsilon, delta)
    return rho_from_epsilon(epsilon, delta)


class LinearPolicy(Policy):
    """Base of the ridge-regression policies: statistics, warm start, clipping.

    `theta0`: None (cold start), a list of d numbers, or "environment" to take the
    public warm-start vector `env.theta0` in `begin`. Then b₀ = λθ₀ and A₀ = λI.
    """

    families: ClassVar[AnyFamily] = ANY_FAMILY
    parameters: ClassVar[Declaration] = (
        number("lam", 1.0, "ridge regulariser λ: A₀ = λI", gt=0),
        Param("theta0", None, "warm start: null (cold), d numbers, or 'environment' (the "
              "data's public warm-start vector)", ("null", "numbers", "string"),
              choices=("environment",)),
    )

    def __init__(self, problem: ProblemInfo, rng: np.random.Generator, **kwargs: Any) -> None:
        super().__init__(problem, rng, **kwargs)
        self.d = int(problem.d)
        self.lam = float(self.params["lam"])
        self.horizon = int(problem.horizon)
        self.explore_rng, self.noise_rng, self.sample_rng = rng.spawn(3)
        self.noise = noise_for(self.accounting, self.noise_rng)
        self.theta0 = self._theta0(self.params["theta0"])
        self.reset()

    def _theta0(self, value: Any) -> np.ndarray:
        if value is None:
            return np.zeros(self.d)
        if isinstance(value, str):
            if value != "environment":
                raise ConfigError(f"theta0 = {value!r} is not allowed; must be null, a list of "
                                  f"{self.d} numbers or 'environment'")
            return np.zeros(self.d)
        theta0 = np.asarray(value, dtype=float)
        if theta0.shape != (self.d,) or not np.all(np.isfinite(theta0)):
            raise ConfigError(f"theta0 has shape {theta0.shape}; must be a list of {self.d} "
                              "finite numbers")
        return theta0

    def reset(self) -> None:
        """A = λI, b = λθ₀, then the subclass state."""
        self.A = np.asfortranarray(self.lam * np.eye(self.d))
        self.b = self.lam * self.theta0
        block = min(self.horizon, 10_000)
        self.explore_normals = NormalStream(self.explore_rng, self.d, block)
        self.noise_normals = NormalStream(self.noise_rng, self.d, block)
        self.setup()

    def setup(self) -> None:
        """Subclass hook: initialise the policy's own state (called after A, b exist)."""

    def begin(self, env: Environment) -> None:
        """Read the run's horizon and (if asked) the environment's public warm start."""
        self.horizon = int(env.horizon)
        if self.params["theta0"] == "environment":
            theta0 = env.theta0
            if theta0 is None:
                raise ConfigError("theta0 = 'environment' but the environment has no theta0")
            self.theta0 = self._theta0(list(np.asarray(theta0, dtype=float)))
        self.reset()

    @property
    def gram(self) -> np.ndarray:
        """The current design matrix A (full symmetric copy)."""
        return symmetric(self.A)

    def add_to_gram(self, x: np.ndarray) -> None:
        """A ← A + x xᵀ (lower triangle, BLAS dsyr in place)."""
        blas.dsyr(1.0, x, lower=1, a=self.A, overwrite_a=1)

    def gaussian_release(self, value: np.ndarray, sigma: float) -> np.ndarray:
        """value + noise of scale σ: exact discrete noise on the snapped value (strict) or
        numpy's σ·N(0, I) (paper); σ must come from `calibrate_release` in strict mode."""
        if self.noise.exact:
            if sigma == 0:  # no noise at all (limit checks)
                return np.asarray(value, dtype=float)
            return self.noise.snap(value, sigma) + self.noise.gaussian(sigma, np.shape(value))
        return value + sigma * self.noise_rng.standard_normal(np.shape(value))

    def calibrate_release(self, sigma: float, sensitivity: float) -> float:
        """The σ to use for a release calibrated as σ for sensitivity Δ with continuous noise:
        unchanged in paper mode, raised for the grid rounding of exact noise (strict)."""
        if sigma == 0:  # no noise at all (limit checks)
            return 0.0
        return inflate_for_snapping(self.noise, sigma, sensitivity, self.d)

    def choose(self, t: int, arms: np.ndarray) -> int:
        raise NotImplementedError

    def observe(self, t: int, x: np.ndarray, r: float) -> None:
        raise NotImplementedError

    def prepare_arms(self, arms: np.ndarray) -> np.ndarray:
        """Features are clipped to the unit ball before any use (the paper's Assumption 1)."""
        return clip_arms(arms)

    def prepare_table(self, table: np.ndarray) -> np.ndarray:
        """A pre-drawn (T, K, d) context table is clipped once, up front."""
        return clip_table(table)

    def select(self, t: int, arms: np.ndarray) -> int:
        """The action for round t on already prepared (clipped) arms."""
        return self.choose(t, arms)

    def update(self, t: int, x: np.ndarray, r: float) -> None:
        """Feed the chosen (prepared) arm and its clipped reward to the statistics."""
        self.observe(t, x, clip_reward(r))


ALPHA = number("alpha", 1.0, "width multiplier α of the confidence bonus", ge=0)
CONVERSION = choice("conversion", "classic", "zCDP → (ε, δ): classic ε = ρ + 2√(ρ ln 1/δ) "
                    "(Bun & Steinke 2016, Prop. 1.3) or tight (dp-accounting's RDP)",
                    ZCDP_CONVERSIONS)


class ZCDPMixin:
    """ρ from (ε, δ) for the zCDP policies; `conversion` is classic (paper, Eq. 2.8) or tight."""

    def zcdp_setup(self) -> float:
        """ρ of the budget; the ledger converts what was spent with the same conversion."""
        conversion = self.params["conversion"]  # type: ignore[attr-defined]
        self.ledger.conversion = conversion  # type: ignore[attr-defined]
        return zcdp_rho(self.epsilon, self.delta, conversion)  # type: ignore[attr-defined]
