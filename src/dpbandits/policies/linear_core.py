"""Shared machinery of the AdaPrivate-TS paper's linear policies (docs/ts.md, "Shared machinery").

Ridge statistics A = λI + Σ x xᵀ (lower triangle kept, rank-one BLAS updates) and b = λθ₀ + …;
A is factorised afresh whenever it changed (A = LLᵀ, O(d³/3), no inverse formed), so TS draws
ξ = v·L⁻ᵀz ~ N(0, v²A⁻¹) and widths ‖x‖_{A⁻¹} = ‖L⁻¹x‖ cost a triangular solve each.
Features are clipped to the unit ball and rewards to [0, 1] before any statistic uses them.

The factorisations come from `dpbandits.linalg`; the exact-noise helpers give bit for bit what
`ExactNoise.snap`/`gaussian` and `inflate_for_snapping` give (tests/policies/test_linear_core.py).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from dpbandits.contract import Environment, ProblemInfo
from dpbandits.errors import ConfigError
from dpbandits.linalg import cho_solve, cholesky, symmetric, widths
from dpbandits.params import Declaration, Param, choice, number
from dpbandits.policies.base import Policy
from dpbandits.privacy import _exact
from dpbandits.privacy.clipping import clip_reward
from dpbandits.privacy.exact_noise import (
    Noise,
    discrete_gaussian,
    inflate_for_snapping,
    noise_for,
)
from dpbandits.privacy.zcdp import rho_from_epsilon, rho_from_epsilon_tight
from dpbandits.scipy_kernels import blas

ZCDP_CONVERSIONS = ("classic", "tight")
SNAP_LIMIT = 2.0**53  # |v| ≥ 2^53·γ is already on the grid (ExactNoise.snap keeps it as is)
INFLATE_STEPS = 200  # as inflate_for_snapping; on no convergence it is called to raise
MEMO_SIZE = 4096  # calibrations remembered per policy (a memo, cleared when full)

_dsyr = blas.dsyr


def ucb_index(arms: np.ndarray, theta: np.ndarray, factor: np.ndarray, scale: float) -> int:
    """argmax of xᵀθ + scale·‖x‖_{A⁻¹}, bit for bit `(arms @ θ + scale * widths).argmax()`."""
    scores = widths(factor, arms)
    if scale != 1.0:  # 1·w is w: no bit changes
        scores *= scale
    scores += arms @ theta
    return int(scores.argmax())


def add_reward(b: np.ndarray, x: np.ndarray, r: float) -> None:
    """b ← b + r·x in place, bit for bit numpy's `b += r * x` (r = 1: 1·x is x itself)."""
    if r == 1.0:
        b += x
    else:
        b += r * x


def snapped_release(noise: Noise, value: Any, sigma: float) -> np.ndarray:
    """`noise.snap(value, σ) + noise.gaussian(σ, shape)` of exact noise, the grid γ found once."""
    gamma = noise.grid(sigma)
    v = np.asarray(value, dtype=float)
    if v.ndim and v.size and np.abs(v).max() < SNAP_LIMIT * gamma:  # else huge, non-finite
        snapped = v / gamma
        np.rint(snapped, out=snapped)
        snapped *= gamma
        return snapped + gamma * discrete_gaussian(noise.rng, math.ceil(sigma / gamma), v.shape)
    return noise.snap(v, sigma) + noise.gaussian(sigma, v.shape)


def inflate_exact(noise: Noise, sigma: float, sensitivity: float, dim: int) -> float:
    """`inflate_for_snapping(noise, σ, Δ, dim)`: compiled (`_exact.inflate`), or its Fraction
    tests done on integers where the compiled arithmetic declines."""
    sigma, sensitivity = float(sigma), float(sensitivity)
    if (not noise.exact or not 0 < sensitivity < math.inf or not 0 < sigma < math.inf):
        return inflate_for_snapping(noise, sigma, sensitivity, dim)
    value = _exact.inflate(sigma, sensitivity, dim)
    return value if value is not None else inflate_integers(noise, sigma, sensitivity, dim)


def inflate_integers(noise: Noise, sigma: float, sensitivity: float, dim: int) -> float:
    """`inflate_for_snapping` of exact noise for finite σ, Δ > 0, its Fraction tests done on
    integers."""
    # The same candidates σ′ in the same order: accept the first with σ′Δ ≥ σ(Δ + γ(σ′)r),
    # r the float above √dim; else go to the float above σ(Δ + γr)/Δ, which int / int rounds
    # correctly, as Fraction.__float__ does.
    sn, sd = sigma.as_integer_ratio()
    dn, dd = sensitivity.as_integer_ratio()
    rn, rd = math.nextafter(math.sqrt(dim), math.inf).as_integer_ratio()
    value = noise.effective_sigma(sigma)
    for _ in range(INFLATE_STEPS):
        gn, gd = noise.grid(value).as_integer_ratio()
        # σ(Δ + γr)/Δ = num/den
        num = sn * dd * (dn * gd * rd + gn * rn * dd)
        den = sd * dn * dd * gd * rd
        vn, vd = value.as_integer_ratio()
        if vn * den >= num * vd:
            return value
        value = noise.effective_sigma(math.nextafter(num / den, math.inf))
    return inflate_for_snapping(noise, sigma, sensitivity, dim)


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
        table, i = self.remaining()
        self.i = i + 1
        return table[i]

    def remaining(self) -> tuple[np.ndarray, int]:
        """The current block and the index of its next row (a new block when it is used up)."""
        if self.i >= len(self.table):
            self.table = self.rng.standard_normal((self.block, self.d))
            self.i = 0
        return self.table, self.i


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
        self.gram_version = 0  # counts the rank-one updates of A
        self._factor: tuple[int, np.ndarray] | None = None
        self._mean: tuple[int, np.ndarray] | None = None
        self._calibrated: dict[tuple[float, float], float] = {}
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
        _dsyr(1.0, x, 1, 1, 0, len(x), self.A, 1)
        self.gram_version += 1

    def gram_updated(self, rounds: int) -> None:
        """Count `rounds` rank-one updates of A made in place by compiled rounds."""
        self.gram_version += rounds

    def factor(self) -> np.ndarray:
        """Lower Cholesky factor of the current A, computed once per change of A."""
        cached = self._factor
        if cached is None or cached[0] != self.gram_version:
            cached = self._factor = (self.gram_version, cholesky(self.A))
        return cached[1]

    def ridge_mean(self) -> np.ndarray:
        """A⁻¹b, once per change of A, for policies that change b only with A (in `observe`)."""
        cached = self._mean
        if cached is None or cached[0] != self.gram_version:
            cached = self._mean = (self.gram_version, cho_solve(self.factor(), self.b))
        return cached[1]

    def gaussian_release(self, value: np.ndarray, sigma: float) -> np.ndarray:
        """value + noise of scale σ: exact discrete noise on the snapped value (strict) or
        numpy's σ·N(0, I) (paper); σ must come from `calibrate_release` in strict mode."""
        if self.noise.exact:
            if sigma == 0:  # no noise at all (limit checks)
                return np.asarray(value, dtype=float)
            return snapped_release(self.noise, value, sigma)
        return value + sigma * self.noise_rng.standard_normal(np.shape(value))

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
            value = self._calibrated[key] = inflate_exact(self.noise, sigma, sensitivity,
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
