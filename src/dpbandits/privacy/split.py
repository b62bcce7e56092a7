"""Per-mechanism budget for k adaptive uses of an (ε, δ) total.

Private-GLM's per-fit budget as the authors' code splits it and Shuffle-GLM's P_GD iterations
(docs/glm.md, "DP-SGD and the RDP accountant" and "Algorithm 1").
"""

from __future__ import annotations

import math

from dpbandits.errors import ConfigError

NAIVE_MAX_K = 10


def advanced_composition(eps0: float, delta0: float, k: int, delta_prime: float
                         ) -> tuple[float, float]:
    """k-fold (ε0, δ0) → (√(2k ln(1/δ′))ε0 + kε0(e^{ε0} − 1), kδ0 + δ′) (Dwork–Rothblum–Vadhan)."""
    eps = math.sqrt(2.0 * k * math.log(1.0 / delta_prime)) * eps0 + k * eps0 * math.expm1(eps0)
    return eps, k * delta0 + delta_prime


def compose(eps0: float, delta0: float, k: int, delta_tot: float,
            switch_k: int = NAIVE_MAX_K) -> tuple[float, float]:
    """The composition rule `split` inverts: basic for k ≤ switch_k, else advanced (δ′ = δ/2)."""
    if k <= switch_k:
        return k * eps0, k * delta0
    return advanced_composition(eps0, delta0, k, delta_tot / 2.0)


def split(eps_tot: float, delta_tot: float, k: int, *, switch_k: int = NAIVE_MAX_K,
          tol: float = 1e-12, iters: int = 100) -> tuple[float, float]:
    """(ε0, δ0) per use: (ε/k, δ/k) for k ≤ 10, else the advanced-composition root.

    Advanced composition: Dwork, Rothblum & Vadhan 2010 (Dwork–Roth 2014, Thm 3.20).
    """
    if not (math.isfinite(eps_tot) and eps_tot > 0):
        raise ConfigError(f"epsilon = {eps_tot!r} is not allowed; must be a finite number > 0")
    if not 0 < delta_tot < 1:
        raise ConfigError(f"delta = {delta_tot!r} is not allowed; must be in (0, 1)")
    if int(k) != k or k < 1:
        raise ConfigError(f"k = {k!r} is not allowed; must be an integer >= 1")
    k = int(k)
    if k <= switch_k:
        return eps_tot / k, delta_tot / k
    delta_prime = delta_tot / 2.0
    delta0 = delta_tot / (2.0 * k)
    a = math.sqrt(2.0 * k * math.log(1.0 / delta_prime))

    def f(e: float) -> float:
        if e > 700.0:
            return math.inf
        return a * e + k * e * math.expm1(e) - eps_tot

    lo, hi = 0.0, max(1.0, eps_tot / a)
    while f(hi) < 0:
        hi *= 2.0
        if hi > 50:
            break
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if f(mid) <= 0:
            lo = mid
        else:
            hi = mid
        if hi - lo < tol:
            break
    return lo, delta0
