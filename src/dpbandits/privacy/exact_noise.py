"""Exact discrete noise for the strict privacy mode (Canonne, Kamath & Steinke 2020, "CKS").

Laplace or Gaussian noise drawn from doubles leaks through the gaps of the floating-point grid
(Mironov 2012). The samplers here are CKS 2020 Algorithms 1–3, written in C
(`dpbandits.privacy._exact`) with exact integer arithmetic only (no floating point anywhere in
the sampling path). They consume 64-bit words from the numpy Generator's BitGenerator (dealt
out a few bits at a time, from a fresh pool for every value, so n draws in one call equal n calls
of one draw), and the same Generator state gives the same numbers on every machine.

`ExactNoise` snaps to a power-of-two grid γ = 2^(⌊log2 scale⌋ − GRID_BITS). A mechanism releases
`snap(value, σ) + gaussian(σ, size)` = γ·(k + Z), with k = snap(value)/γ ∈ ℤ^dim and Z discrete
Gaussian of integer σ/γ. Rounding two neighbouring values moves each coordinate by at most γ more,
so k has ℓ2 sensitivity Δ'/γ with Δ' = Δ + γ√dim, and the release is exactly the discrete
Gaussian mechanism: ρ-zCDP with ρ = Δ'²/(2σ²) (CKS 2020, Thm 4). The float sum is a function of
the integer k + Z alone (both terms are multiples of γ and IEEE addition rounds the exact sum),
hence post-processing. Likewise `snap(value, b) + laplace(b, size)` is the discrete Laplace
(geometric) mechanism on k with ℓ1 sensitivity Δ'/γ, Δ' = Δ + γ·dim: ε-DP with ε = Δ'/b.
`calibrate_gaussian` / `calibrate_laplace` return a σ (or b) on its own grid and Δ' with
Δ'²/(2σ²) ≤ ρ (or Δ'/b ≤ ε) checked in exact rational arithmetic. The snap must use the same σ
(or b) as the noise.

`NumpyNoise` has the same interface and reproduces the project's float draws bit for bit
(`rng.normal`, `rng.laplace`, no snapping).

Supported ranges: integer σ and Laplace scale in [1, 2^31) for the discrete samplers;
γ = num/den with 0 ≤ num < 2^64 and 1 ≤ den < 2^64 for `bernoulli_exp`; float scales in
[2^-1000, 2^1000] for the grid. A draw can fail only on an event of probability < exp(−2^31), and
then raises RuntimeError rather than return a wrong value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any, Protocol

import numpy as np

from dpbandits.errors import ConfigError
from dpbandits.privacy import _exact
from dpbandits.privacy.grid import noisy_into, snap_all

__all__ = [
    "GRID_BITS",
    "PARAM_LIMIT",
    "ExactNoise",
    "Noise",
    "NumpyNoise",
    "bernoulli_exp",
    "discrete_gaussian",
    "discrete_laplace",
]

GRID_BITS = 20
PARAM_LIMIT = 2**31  # integer σ and Laplace scale t must be < 2^31
MIN_SCALE, MAX_SCALE = 2.0**-1000, 2.0**1000  # float scales the grid accepts
_CALIBRATION_STEPS = 200

Size = int | tuple[int, ...] | None


def _integer(value: Any, name: str, low: int, high: int, high_text: str) -> int:
    """`value` as an int in [low, high), else a one-line ConfigError (a ValueError)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        ok = False
    else:
        ok = low <= int(value) < high
    if not ok:
        raise ConfigError(
            f"{name} = {value!r} is not allowed; must be an integer in [{low}, {high_text})"
        )
    return int(value)


def _positive(value: Any, name: str) -> float:
    """`value` as a finite float > 0, else a one-line ConfigError."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float | np.number)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(f"{name} = {value!r} is not allowed; must be a finite number > 0")
    return float(value)


def _fill(rng: np.random.Generator, sampler: Callable[..., None], out: np.ndarray,
          *params: float) -> np.ndarray:
    """Run a C sampler into `out` while holding the BitGenerator's lock."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, not {type(rng).__name__}")
    bit_generator = rng.bit_generator
    with bit_generator.lock:
        sampler(bit_generator.capsule, *params, out)
    return out


def _empty(size: Size, dtype: type) -> np.ndarray:
    return np.empty(() if size is None else size, dtype=dtype)


def discrete_gaussian(rng: np.random.Generator, sigma: int, size: Size = None,
                      out: np.ndarray | None = None) -> np.ndarray:
    """Discrete Gaussian, P(k) ∝ exp(−k²/(2σ²)), integer 1 ≤ σ < 2^31 (CKS 2020, Algorithm 3),
    into `out` (C-contiguous int64) when given."""
    s = _integer(sigma, "sigma", 1, PARAM_LIMIT, "2^31")
    return _fill(rng, _exact.discrete_gaussian, _empty(size, np.int64) if out is None else out, s)


def discrete_laplace(rng: np.random.Generator, scale: int, size: Size = None) -> np.ndarray:
    """Discrete Laplace, P(k) ∝ exp(−|k|/t), integer 1 ≤ t < 2^31 (CKS 2020, Algorithm 2)."""
    t = _integer(scale, "scale", 1, PARAM_LIMIT, "2^31")
    return _fill(rng, _exact.discrete_laplace, _empty(size, np.int64), t)


def bernoulli_exp(rng: np.random.Generator, num: int, den: int, size: Size = None) -> np.ndarray:
    """Bernoulli(exp(−num/den)), 0 ≤ num < 2^64, 1 ≤ den < 2^64 (CKS 2020, Algorithm 1)."""
    n = _integer(num, "num", 0, 2**64, "2^64")
    d = _integer(den, "den", 1, 2**64, "2^64")
    return _fill(rng, _exact.bernoulli_exp, _empty(size, np.bool_), n, d)


def _at_least(guess: float, holds: Callable[[Fraction], bool]) -> float:
    """Smallest float ≥ guess (stepping up by one ulp) for which `holds` is true."""
    value = guess
    while not holds(Fraction(value)):
        value = math.nextafter(value, math.inf)
    return value


class Noise(Protocol):
    """What a policy needs from its noise source: draws, snapping and calibration."""

    exact: bool
    name: str
    rng: np.random.Generator

    def grid(self, scale: float) -> float:
        """Grid spacing γ used at this noise scale (0.0: no grid)."""
        ...

    def snap(self, value: Any, scale: float) -> np.ndarray:
        """`value` rounded to the grid of `scale`, as a float array."""
        ...

    def gaussian(self, sigma: float, size: Size = None) -> Any:
        """Centred Gaussian-type noise of standard deviation (at least) σ."""
        ...

    def gaussian_sampler(self, sigma: float) -> Callable[[tuple[int, ...]], np.ndarray]:
        """`size ↦ gaussian(sigma, size)`, with what depends on σ alone found once."""
        ...

    def laplace(self, scale: float, size: Size = None) -> Any:
        """Centred Laplace-type noise of scale (at least) b."""
        ...

    def effective_sigma(self, sigma: float) -> float:
        """The σ that `gaussian(sigma)` actually uses (≥ sigma)."""
        ...

    def effective_scale(self, scale: float) -> float:
        """The scale that `laplace(scale)` actually uses (≥ scale)."""
        ...

    def calibrate_gaussian(self, sensitivity: float, rho: float, dim: int) -> tuple[float, float]:
        """(σ, Δ') for a ρ-zCDP release of a dim-vector of ℓ2 sensitivity Δ: Δ'²/(2σ²) ≤ ρ."""
        ...

    def calibrate_laplace(
        self, sensitivity_l1: float, epsilon: float, dim: int
    ) -> tuple[float, float]:
        """(b, Δ') for an ε-DP release of a dim-vector of ℓ1 sensitivity Δ: Δ'/b ≤ ε."""
        ...


class ExactNoise:
    """Snapped exact discrete noise (CKS 2020, Algorithms 1–3); privacy per CKS 2020, Thm 4."""

    exact = True
    name = "exact-discrete"

    def __init__(self, rng: np.random.Generator) -> None:
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, not {type(rng).__name__}")
        self.rng = rng

    def grid(self, scale: float) -> float:
        """γ = 2^(⌊log2 scale⌋ − GRID_BITS), so that scale/γ ∈ [2^20, 2^21)."""
        value = scale
        if not (type(value) is float and MIN_SCALE <= value <= MAX_SCALE):  # else: checked
            value = _positive(scale, "scale")
            if not MIN_SCALE <= value <= MAX_SCALE:
                raise ConfigError(
                    f"scale = {scale!r} is not allowed; must be a number in [2^-1000, 2^1000]"
                )
        return math.ldexp(1.0, math.frexp(value)[1] - 1 - GRID_BITS)

    def snap(self, value: Any, scale: float) -> np.ndarray:
        """`value` rounded to the nearest multiple of γ = grid(scale) (ties to even; exact;
        `grid.snap`)."""
        gamma = self.grid(scale)
        v = np.array(value, dtype=float)
        snap_all(v.reshape(-1), gamma)
        return v

    def release(self, value: Any, sigma: float) -> np.ndarray:
        """`snap(value, σ) + gaussian(σ, shape)`, the grid found once: the discrete Gaussian
        mechanism on the snapped value (CKS 2020, Thm 4)."""
        s, gamma = self.integer_sigma(sigma)
        v = np.array(value, dtype=float)
        z = discrete_gaussian(self.rng, s, v.shape)
        noisy_into(v.reshape(-1), gamma, gamma, z.reshape(-1).astype(float), v.reshape(-1))
        return v

    def effective_sigma(self, sigma: float) -> float:
        """γ·⌈σ/γ⌉ ≥ σ: the standard deviation parameter `gaussian(sigma)` uses."""
        gamma = self.grid(sigma)
        return math.ceil(sigma / gamma) * gamma

    def effective_scale(self, scale: float) -> float:
        """γ·⌈b/γ⌉ ≥ b: the scale `laplace(scale)` uses."""
        gamma = self.grid(scale)
        return math.ceil(scale / gamma) * gamma

    def gaussian(self, sigma: float, size: Size = None) -> Any:
        """γ·Z, Z discrete Gaussian with integer σ_Z = ⌈σ/γ⌉ (CKS 2020, Algorithm 3)."""
        gamma = self.grid(sigma)
        return gamma * discrete_gaussian(self.rng, math.ceil(sigma / gamma), size)

    def gaussian_sampler(self, sigma: float) -> Callable[[tuple[int, ...]], np.ndarray]:
        """`size ↦ gaussian(sigma, size)` for repeated draws at one σ: γ and the integer σ_Z
        found and checked once; the same draws and values."""
        s, gamma = self.integer_sigma(sigma)
        rng, sampler = self.rng, _exact.discrete_gaussian
        return lambda size: gamma * _fill(rng, sampler, np.empty(size, dtype=np.int64), s)

    def symmetric_sampler(self, sigma_diagonal: float, sigma_above: float,
                          dim: int) -> Callable[..., np.ndarray]:
        """`() ↦` a symmetric dim × dim matrix, `gaussian(σ_d)` on the diagonal and
        `gaussian(σ_a)` above it, mirrored below: the draws and values of
        `gaussian_sampler(σ_d)((dim,))` then `gaussian_sampler(σ_a)((dim(dim − 1)/2,))` placed
        by `np.triu_indices(dim, 1)`, in one call; `(k) ↦` k of them stacked, what k calls
        draw."""
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ConfigError(f"dim = {dim!r} is not allowed; must be an integer >= 1")
        s_d, gamma_d = self.integer_sigma(sigma_diagonal)
        s_a, gamma_a = self.integer_sigma(sigma_above)
        rng, sampler = self.rng, _exact.discrete_gaussian_symmetric
        return lambda count=None: _fill(
            rng, sampler, np.empty((dim, dim) if count is None else (count, dim, dim)),
            s_d, s_a, gamma_d, gamma_a)

    def integer_sigma(self, sigma: float) -> tuple[int, float]:
        """(σ_Z, γ): the checked integer σ_Z = ⌈σ/γ⌉ of `gaussian(sigma)` and its grid γ."""
        gamma = self.grid(sigma)
        return _integer(math.ceil(sigma / gamma), "sigma", 1, PARAM_LIMIT, "2^31"), gamma

    def laplace(self, scale: float, size: Size = None) -> Any:
        """γ·Z, Z discrete Laplace with integer scale ⌈b/γ⌉ (CKS 2020, Algorithm 2)."""
        gamma = self.grid(scale)
        return gamma * discrete_laplace(self.rng, math.ceil(scale / gamma), size)

    def _l2_sensitivity(self, sensitivity: float, gamma: float, dim: int) -> float:
        """Smallest float ≥ Δ + γ√dim (checked exactly)."""
        delta, g2 = Fraction(sensitivity), Fraction(gamma) ** 2 * dim

        def holds(x: Fraction) -> bool:
            return x >= delta and (x - delta) ** 2 >= g2

        return _at_least(sensitivity + gamma * math.sqrt(dim), holds)

    def _l1_sensitivity(self, sensitivity: float, gamma: float, dim: int) -> float:
        """Smallest float ≥ Δ + γ·dim (checked exactly)."""
        bound = Fraction(sensitivity) + Fraction(gamma) * dim
        return _at_least(sensitivity + gamma * dim, lambda x: x >= bound)

    def calibrate_gaussian(self, sensitivity: float, rho: float, dim: int) -> tuple[float, float]:
        """(σ on its grid, Δ' = Δ + γ√dim) with Δ'²/(2σ²) ≤ ρ exactly (CKS 2020, Thm 4)."""
        delta = _positive(sensitivity, "sensitivity")
        rho = _positive(rho, "rho")
        dim = _integer(dim, "dim", 1, 2**53, "2^53")
        root = math.sqrt(2.0 * rho)
        slack = math.ldexp(math.sqrt(dim), -GRID_BITS)  # γ√dim ≤ σ·slack
        if slack >= root:
            raise ConfigError(
                f"rho = {rho!r} is not allowed with dim = {dim} and GRID_BITS = {GRID_BITS}; "
                f"must be > dim * 2^-{2 * GRID_BITS + 1}"
            )
        budget = 2 * Fraction(rho)
        sigma = delta / root
        for step in range(_CALIBRATION_STEPS):
            if step == _CALIBRATION_STEPS // 2:  # slow fixed point: jump to the closed form
                sigma = max(sigma, delta / (root - slack))
            sigma = self.effective_sigma(sigma)
            dprime = self._l2_sensitivity(delta, self.grid(sigma), dim)
            if Fraction(dprime) ** 2 <= budget * Fraction(sigma) ** 2:
                return sigma, dprime
            sigma = max(math.nextafter(sigma, math.inf), dprime / root)
        raise ConfigError(f"calibrate_gaussian did not converge for sensitivity = {sensitivity!r}, "
                          f"rho = {rho!r}, dim = {dim}")

    def calibrate_laplace(
        self, sensitivity_l1: float, epsilon: float, dim: int
    ) -> tuple[float, float]:
        """(b on its grid, Δ' = Δ + γ·dim) with Δ'/b ≤ ε exactly (discrete Laplace, CKS Alg. 2)."""
        delta = _positive(sensitivity_l1, "sensitivity_l1")
        eps = _positive(epsilon, "epsilon")
        dim = _integer(dim, "dim", 1, 2**53, "2^53")
        slack = math.ldexp(float(dim), -GRID_BITS)  # γ·dim ≤ b·slack
        if slack >= eps:
            raise ConfigError(
                f"epsilon = {epsilon!r} is not allowed with dim = {dim} and GRID_BITS = "
                f"{GRID_BITS}; must be > dim * 2^-{GRID_BITS}"
            )
        budget = Fraction(eps)
        scale = delta / eps
        for step in range(_CALIBRATION_STEPS):
            if step == _CALIBRATION_STEPS // 2:
                scale = max(scale, delta / (eps - slack))
            scale = self.effective_scale(scale)
            dprime = self._l1_sensitivity(delta, self.grid(scale), dim)
            if Fraction(dprime) <= budget * Fraction(scale):
                return scale, dprime
            scale = max(math.nextafter(scale, math.inf), dprime / eps)
        raise ConfigError(f"calibrate_laplace did not converge for sensitivity_l1 = "
                          f"{sensitivity_l1!r}, epsilon = {epsilon!r}, dim = {dim}")


class NumpyNoise:
    """The project's float noise, bit for bit: rng.normal / rng.laplace, no grid."""

    exact = False
    name = "numpy-float"

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def grid(self, scale: float) -> float:
        """No grid: 0.0."""
        return 0.0

    def snap(self, value: Any, scale: float) -> np.ndarray:
        """Identity (as a float array)."""
        return np.asarray(value, dtype=float)

    def effective_sigma(self, sigma: float) -> float:
        """Identity."""
        return float(sigma)

    def effective_scale(self, scale: float) -> float:
        """Identity."""
        return float(scale)

    def gaussian(self, sigma: float, size: Size = None) -> Any:
        """Exactly rng.normal(0.0, sigma, size)."""
        return self.rng.normal(0.0, sigma, size)

    def gaussian_sampler(self, sigma: float) -> Callable[[tuple[int, ...]], np.ndarray]:
        """`size ↦ rng.normal(0.0, sigma, size)`."""
        normal = self.rng.normal
        return lambda size: normal(0.0, sigma, size)

    def laplace(self, scale: float, size: Size = None) -> Any:
        """Exactly rng.laplace(0.0, scale, size)."""
        return self.rng.laplace(0.0, scale, size)

    def calibrate_gaussian(self, sensitivity: float, rho: float, dim: int) -> tuple[float, float]:
        """(Δ/√(2ρ), Δ): the continuous Gaussian mechanism's calibration."""
        delta = _positive(sensitivity, "sensitivity")
        return delta / math.sqrt(2.0 * _positive(rho, "rho")), delta

    def calibrate_laplace(
        self, sensitivity_l1: float, epsilon: float, dim: int
    ) -> tuple[float, float]:
        """(Δ/ε, Δ): the continuous Laplace mechanism's calibration."""
        delta = _positive(sensitivity_l1, "sensitivity_l1")
        return delta / _positive(epsilon, "epsilon"), delta


def noise_for(accounting: str, rng: np.random.Generator) -> Noise:
    """Strict accounting draws exact discrete noise; paper accounting keeps numpy's floats."""
    return ExactNoise(rng) if accounting == "strict" else NumpyNoise(rng)


def inflate_for_snapping(noise: Noise, sigma: float, sensitivity: float, dim: int) -> float:
    """Smallest grid σ' ≥ σ with σ'/(Δ + γ(σ')√dim) ≥ σ/Δ: keeps a calibration made for the
    continuous mechanism (e.g. by RDP) valid for the snapped query. The compiled integer test
    (`_exact.inflate`, exact_calibration.h) answers where its binary arithmetic reaches, the
    Fraction loop (`inflate_by_fractions`) elsewhere: the same σ'."""
    if not noise.exact:
        return float(sigma)
    if 0 < sensitivity < math.inf and 0 < sigma < math.inf:
        compiled = _exact.inflate(float(sigma), float(sensitivity), dim)
        if compiled is not None:
            return compiled
    return inflate_by_fractions(noise, sigma, sensitivity, dim)


def inflate_by_fractions(noise: Noise, sigma: float, sensitivity: float, dim: int) -> float:
    """`inflate_for_snapping` in exact rational arithmetic (`fractions.Fraction`)."""
    ratio = Fraction(sigma) / Fraction(sensitivity)
    value = noise.effective_sigma(sigma)
    for _ in range(_CALIBRATION_STEPS):
        root = Fraction(math.nextafter(math.sqrt(dim), math.inf))  # ≥ √dim
        bound = Fraction(sensitivity) + Fraction(noise.grid(value)) * root
        if Fraction(value) >= ratio * bound:
            return value
        value = noise.effective_sigma(math.nextafter(float(ratio * bound), math.inf))
    raise ConfigError(f"inflate_for_snapping did not converge for sigma = {sigma!r}")
