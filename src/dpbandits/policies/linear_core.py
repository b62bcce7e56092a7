"""Shared machinery of the AdaPrivate-TS paper's linear policies (docs/ts.md, "Shared machinery").

Ridge statistics A = λI + Σ x xᵀ and b = λθ₀ + Σ r x, updated by `ridge_update`; A is
factorised afresh when a rule needs it (A = LLᵀ, no inverse formed), so TS draws
ξ = v·L⁻ᵀz ~ N(0, v²A⁻¹) and widths ‖x‖_{A⁻¹} = ‖L⁻¹x‖ cost a triangular solve each.
Features are clipped to the unit ball and rewards to [0, 1] before any statistic uses them.
The kernels (`dpbandits.jit`) are what both the policies' `select`/`update` and their compiled
round loops call.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from dpbandits.contract import Environment, ProblemInfo
from dpbandits.errors import ConfigError
from dpbandits.jit import jit
from dpbandits.linalg import add_outer, add_scaled, cho_solve, cholesky, dot, inverse_norm
from dpbandits.params import Declaration, Param, choice, number
from dpbandits.policies.base import Policy
from dpbandits.privacy.clipping import clip_reward
from dpbandits.privacy.exact_noise import (
    Noise,
    discrete_gaussian,
    inflate_for_snapping,
    noise_for,
)
from dpbandits.privacy.release import draw
from dpbandits.privacy.zcdp import rho_from_epsilon, rho_from_epsilon_tight

ZCDP_CONVERSIONS = ("classic", "tight")
MEMO_SIZE = 4096  # calibrations remembered per policy (a memo, cleared when full)
BLOCK_MAX = 1024  # rows of noise drawn at most at once (`NoiseRows`)


@jit
def ucb_index(arms: np.ndarray, theta: np.ndarray, factor: np.ndarray, scale: float) -> int:
    """The first argmax over the rows x of `arms` of xᵀθ + scale·‖x‖_{A⁻¹} (A = LLᵀ)."""
    work = np.empty(theta.shape[0])
    best, index = -np.inf, 0
    for i in range(arms.shape[0]):
        score = dot(arms[i], theta) + scale * inverse_norm(factor, arms[i], work)
        if score > best:
            best, index = score, i
    return index


@jit
def greedy_index(arms: np.ndarray, theta: np.ndarray) -> int:
    """The first argmax over the rows x of `arms` of xᵀθ."""
    best, index = -np.inf, 0
    for i in range(arms.shape[0]):
        score = dot(arms[i], theta)
        if score > best:
            best, index = score, i
    return index


@jit
def ridge_update(A: np.ndarray, b: np.ndarray, x: np.ndarray, r: float) -> None:
    """A ← A + x xᵀ, b ← b + r·x (ridge regression's statistics, one observation)."""
    add_outer(A, x, 1.0)
    add_scaled(b, x, r)


class NoiseRows:
    """Rows of noise of length d for releases, drawn from the noise generator a block at a time:
    standard normals (continuous noise) or discrete Gaussian integers of one integer scale s
    (exact noise). A release of scale s takes the next row of the block when the block has
    that scale, else a block is drawn for s, the rest of the old one left unused; blocks double
    in size while the scale stays (up to BLOCK_MAX rows). The rows are the generator's draws
    in order, as row-by-row draws would give them, but for the rows left unused. Compiled
    rounds take rows too (`rows`, `cursor`, `scale`), as `take` does."""

    def __init__(self, noise: Noise, d: int) -> None:
        self.noise, self.d = noise, d
        self.rows = np.empty((0, d))
        self.cursor = np.zeros(1, dtype=np.int64)  # the next row
        self.scale = -1.0  # s of the block (0.0: standard normals)

    def take(self, s: int) -> np.ndarray:
        """The next row for a release of integer scale s (0: a standard normal row)."""
        if float(s) != self.scale or self.cursor[0] >= len(self.rows):
            size = min(2 * len(self.rows), BLOCK_MAX) if float(s) == self.scale else 1
            self.draw(s, size)
        row = self.rows[self.cursor[0]]
        self.cursor[0] += 1
        return row

    def draw(self, s: int, size: int) -> None:
        """A new block of `size` rows of scale s."""
        if s == 0:
            self.rows = self.noise.rng.standard_normal((size, self.d))
        else:
            self.rows = discrete_gaussian(self.noise.rng, s, (size, self.d)).astype(float)
        self.scale = float(s)
        self.cursor[0] = 0


class AnyFamily(tuple):
    """Reward families a link-free linear policy accepts: every one (rewards are clipped)."""

    def __contains__(self, item: object) -> bool:
        return isinstance(item, str)


ANY_FAMILY = AnyFamily(("any",))


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
        self.A = self.lam * np.eye(self.d)
        self.b = self.lam * self.theta0
        self._calibrated: dict[tuple[float, float], float] = {}
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
        """The current design matrix A."""
        return self.A.copy()

    def factor(self) -> np.ndarray:
        """Lower Cholesky factor of the current A."""
        return cholesky(self.A)

    def ridge_mean(self) -> np.ndarray:
        """θ̂ = A⁻¹b."""
        return cho_solve(self.factor(), self.b)

    def gaussian_release(self, value: np.ndarray, sigma: float) -> np.ndarray:
        """value + noise of scale σ, drawn as the policies' releases draw it (`release.draw`):
        exact discrete noise on the snapped value (strict) or numpy's σ·N(0, I) (paper); σ must
        come from `calibrate_release` in strict mode."""
        return draw(self.noise, np.array(value, dtype=float), "gaussian", sigma)

    def calibrate_release(self, sigma: float, sensitivity: float) -> float:
        """The σ to use for a release calibrated as σ for sensitivity Δ with continuous noise:
        unchanged in paper mode, raised for the grid rounding of exact noise (strict)."""
        if sigma == 0:  # no noise at all (limit checks)
            return 0.0
        key = (sigma, sensitivity)
        value = self._calibrated.get(key)
        if value is None:
            if len(self._calibrated) >= MEMO_SIZE:
                self._calibrated.clear()
            value = self._calibrated[key] = inflate_for_snapping(self.noise, sigma, sensitivity,
                                                          self.d)
        return value

    def choose(self, t: int, arms: np.ndarray) -> int:
        raise NotImplementedError

    def observe(self, t: int, x: np.ndarray, r: float) -> None:
        raise NotImplementedError

    @property
    def clips_contexts(self) -> bool:
        """Always: features in the unit ball is the paper's Assumption 1."""
        return True

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
