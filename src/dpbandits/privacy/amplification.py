"""Privacy amplification by shuffling n ε0-LDP reports: closed forms, inverse, numerical bound.

Closed forms: Feldman–McMillan–Talwar 2021 ("Hiding among the clones") Theorem 3.1 as printed
(`fmt_thm`) and the variant of their reference implementation (`fmt_ref`); the numerical bound
is their hockey-stick computation on the reduced pair of binomial mixtures (FMT21, Appendix E).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from dpbandits.errors import ConfigError

CLOSED_FORMS = ("fmt_thm", "fmt_ref")
BOUNDS = (*CLOSED_FORMS, "numerical")
EPS0_MAX = 15.0


def check_inputs(n: float, delta: float, **epsilons: float) -> None:
    """n ≥ 1, δ ∈ (0, 1), every ε finite and > 0; else one ConfigError line."""
    if not isinstance(n, int | np.integer) or n < 1:
        raise ConfigError(f"n = {n!r} is not allowed; must be an integer >= 1")
    if not isinstance(delta, int | float | np.number) or not 0 < delta < 1:
        raise ConfigError(f"delta = {delta!r} is not allowed; must be in the open interval (0, 1)")
    for name, value in epsilons.items():
        if not isinstance(value, int | float | np.number) or not math.isfinite(value) or value <= 0:
            raise ConfigError(f"{name} = {value!r} is not allowed; must be a finite number > 0")


def threshold(n: int, delta: float, variant: str = "fmt_thm") -> float:
    """Largest ε0 where the closed form applies: ln(n / (16 ln(c/δ))), c = 2 (thm) or 4 (ref)."""
    c = 2.0 if variant == "fmt_thm" else 4.0
    return math.log(n / (16.0 * math.log(c / delta)))


def _closed_branch(eps0: float, n: int, delta: float, variant: str) -> float:
    """The closed-form branch g(ε0) (FMT21 Thm 3.1)."""
    a = 8.0 * math.sqrt(math.exp(eps0) * math.log(4.0 / delta) / n)
    c = 8.0 * math.exp(eps0) / n
    if variant == "fmt_thm":
        return math.log1p(math.tanh(eps0 / 2.0) * (a + c))
    e_prime = math.log1p(a + c)
    factor = -math.expm1(-eps0) / (1.0 + math.exp(-eps0 - e_prime))
    return math.log1p(factor * (a + c))


def _check_variant(variant: str, allowed: tuple[str, ...] = CLOSED_FORMS) -> None:
    if variant not in allowed:
        raise ConfigError(
            f"amplification = {variant!r} is not allowed; allowed: {', '.join(allowed)}"
        )


def closed_form_epsilon(eps0: float, n: int, delta: float, variant: str = "fmt_thm") -> float:
    """f_{n,δ}(ε0): central ε after shuffling n ε0-LDP reports, or ε0 outside the valid regime."""
    check_inputs(n, delta, eps0=eps0)
    _check_variant(variant)
    thr = threshold(n, delta, variant)
    if thr <= 0 or eps0 > thr:
        return float(eps0)
    return min(float(eps0), _closed_branch(eps0, n, delta, variant))


def closed_form_inverse(eps: float, n: int, delta: float, variant: str = "fmt_thm") -> float:
    """f^{-1}_{n,δ}(ε): largest ε0 whose shuffled guarantee is ≤ ε, never below ε.

    The per-batch ε0^{(i)} = f⁻¹_{n_i,δ}(ε) of Hanna et al., Section 5.
    """
    check_inputs(n, delta, eps=eps)
    _check_variant(variant)
    thr = threshold(n, delta, variant)
    if thr <= 0:
        return float(eps)
    if _closed_branch(thr, n, delta, variant) <= eps:
        return max(thr, float(eps))
    low, high = 0.0, thr
    for _ in range(100):
        mid = 0.5 * (low + high)
        if _closed_branch(mid, n, delta, variant) <= eps:
            low = mid
        else:
            high = mid
    return max(float(eps), low)


def _hockey_stick(c: np.ndarray, eps: float, eps0: float, p_direction: bool) -> np.ndarray:
    """Conditional hockey-stick divergence of the reduced pair given C = c (FMT21 App. E)."""
    from scipy import stats  # heavy import, only for the numerical bound

    alpha = math.exp(eps0) / (math.exp(eps0) + 1.0)
    ratio = (math.exp(eps) * alpha - (1.0 - alpha)) / (alpha - math.exp(eps) * (1.0 - alpha))
    cutoff = (c + 1.0) / (1.0 + ratio) if p_direction else (c + 1.0) / (1.0 + 1.0 / ratio)
    f_hi = stats.binom.cdf(cutoff, c, 0.5)
    f_lo = stats.binom.cdf(cutoff - 1.0, c, 0.5)
    p_mass = alpha * f_hi + (1.0 - alpha) * f_lo
    q_mass = (1.0 - alpha) * f_hi + alpha * f_lo
    if p_direction:
        return p_mass - math.exp(eps) * q_mass
    return (1.0 - q_mass) - math.exp(eps) * (1.0 - p_mass)


@lru_cache(maxsize=256)
def _clone_blocks(n: int, eps0: float, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Blocks of clone counts walked outward from E[C], C ~ Bin(n−1, e^{−ε0}), with their mass."""
    from scipy import stats  # heavy import, only for the numerical bound

    p = math.exp(-eps0)
    mean = (n - 1) * p
    lows: list[int] = []
    highs: list[int] = []
    for b in range(1, math.ceil(n / step) + 1):
        hi = math.ceil(mean + b * step)
        lo = hi - step if b == 1 else hi - step + 1
        if lo <= n - 1:
            lows.append(lo)
            highs.append(min(hi, n - 1))
        lo = math.ceil(mean - b * step)
        hi = lo + step - 1
        if hi >= 0:
            lows.append(max(0, lo))
            highs.append(hi)
    lo_arr, hi_arr = np.array(lows, dtype=float), np.array(highs, dtype=float)
    mass = (
        stats.binom.cdf(hi_arr, n - 1, p)
        - stats.binom.cdf(lo_arr, n - 1, p)
        + stats.binom.pmf(lo_arr, n - 1, p)
    )
    return lo_arr, hi_arr, mass


def shuffle_delta(
    n: int,
    eps0: float,
    eps: float,
    delta_target: float,
    *,
    step: int = 100,
    upper: bool = True,
    ref_compat: bool = False,
) -> float:
    """δ(ε) of shuffling n ε0-LDP reports, or δ_target when it exceeds it (FMT21 `deltacomp`)."""
    lo, hi, mass = _clone_blocks(n, eps0, step)
    h_p = np.maximum if upper else np.minimum
    p_add = h_p(_hockey_stick(hi, eps, eps0, True), _hockey_stick(lo, eps, eps0, True))
    q_hi = _hockey_stick(hi, eps, eps0, False)
    q_lo = q_hi if (upper and ref_compat) else _hockey_stick(lo, eps, eps0, False)
    q_add = h_p(q_hi, q_lo)
    acc_p = np.concatenate(([0.0], np.cumsum(mass * p_add)))
    acc_q = np.concatenate(([0.0], np.cumsum(mass * q_add)))
    used = np.concatenate(([0.0], np.cumsum(mass)))
    over = np.maximum(acc_p, acc_q)[:-1] > delta_target
    done = ((1.0 - used) < acc_p)[:-1] & ((1.0 - used) < acc_q)[:-1]
    hits = np.flatnonzero(over | done)
    j = int(hits[0]) if hits.size else mass.size
    if j < mass.size and over[j]:
        return float(delta_target)
    value = max(acc_p[j], acc_q[j])
    return float(value + (1.0 - used[j]) if upper else value)


def numerical_epsilon(
    eps0: float,
    n: int,
    delta: float,
    *,
    iterations: int = 20,
    step: int = 100,
    upper: bool = True,
    ref_compat: bool = False,
) -> float:
    """Shuffled ε by bisection on the numerical δ(ε) (FMT21 `numericalanalysis`)."""
    check_inputs(n, delta, eps0=eps0)
    if eps0 < threshold(n, delta, "fmt_ref"):
        high = _closed_branch(eps0, n, delta, "fmt_ref")
    else:
        high = float(eps0)
    low = 0.0
    for _ in range(iterations):
        mid = 0.5 * (low + high)
        value = shuffle_delta(n, eps0, mid, delta, step=step, upper=upper, ref_compat=ref_compat)
        if value < delta:
            high = mid
        else:
            low = mid
    return float(high)


@lru_cache(maxsize=4096)
def numerical_inverse(eps: float, n: int, delta: float, *, iterations: int = 20) -> float:
    """Largest ε0 ∈ [ε, 15] whose numerical upper bound is ≤ ε, by bisection."""
    check_inputs(n, delta, eps=eps)
    low, high = float(eps), max(EPS0_MAX, float(eps))
    for _ in range(iterations):
        mid = 0.5 * (low + high)
        if numerical_epsilon(mid, n, delta) <= eps:
            low = mid
        else:
            high = mid
    return low


def amplified_epsilon(eps0: float, n: int, delta: float, bound: str = "fmt_thm") -> float:
    """Central ε of n shuffled ε0-LDP reports under the chosen bound."""
    _check_variant(bound, BOUNDS)
    if bound == "numerical":
        return numerical_epsilon(eps0, n, delta)
    return closed_form_epsilon(eps0, n, delta, bound)


def local_epsilon(eps: float, n: int, delta: float, bound: str = "fmt_thm") -> float:
    """Per-report ε0 = f^{-1}_{n,δ}(ε) under the chosen bound (Algorithm 3's batch budget)."""
    _check_variant(bound, BOUNDS)
    if bound == "numerical":
        check_inputs(n, delta, eps=eps)
        return numerical_inverse(float(eps), int(n), float(delta))
    return closed_form_inverse(eps, n, delta, bound)
