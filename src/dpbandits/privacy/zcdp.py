"""zCDP ↔ (ε, δ) conversions and the Gaussian mechanism's zCDP calibration."""

from __future__ import annotations

import math
from functools import lru_cache

from dpbandits.errors import ConfigError


def _check(name: str, value: float, low: float, high: float | None = None) -> None:
    ok = math.isfinite(value) and value > low and (high is None or value < high)
    if not ok:
        allowed = f"in ({low}, {high})" if high is not None else f"> {low}"
        raise ConfigError(f"{name} = {value!r} is not allowed; must be {allowed}")


def epsilon_from_rho(rho: float, delta: float) -> float:
    """Classic conversion ε = ρ + 2√(ρ ln(1/δ)) (Bun & Steinke 2016, Prop. 1.3)."""
    _check("rho", rho, 0.0)
    _check("delta", delta, 0.0, 1.0)
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def rho_from_epsilon(epsilon: float, delta: float) -> float:
    """Inverse of the classic conversion: ρ = (√(ln(1/δ) + ε) − √ln(1/δ))².

    The classic conversion is Bun & Steinke 2016, Prop. 1.3 (AdaPrivate-TS Eq. (2.8)).
    """
    _check("epsilon", epsilon, 0.0)
    _check("delta", delta, 0.0, 1.0)
    a = math.log(1.0 / delta)
    return (math.sqrt(a + epsilon) - math.sqrt(a)) ** 2


@lru_cache(maxsize=4096)
def epsilon_from_rho_tight(rho: float, delta: float) -> float:
    """Tighter ρ-zCDP → (ε, δ) through dp-accounting's RDP conversion (RDP(α) = ρα)."""
    _check("rho", rho, 0.0)
    _check("delta", delta, 0.0, 1.0)
    import dp_accounting  # heavy import (scipy.signal/stats): only where it is used

    orders = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 257))
    accountant = dp_accounting.rdp.RdpAccountant(orders)
    # A Gaussian with noise multiplier z has RDP α/(2z²) = ρα for z = 1/√(2ρ).
    accountant.compose(dp_accounting.GaussianDpEvent(1.0 / math.sqrt(2.0 * rho)))
    return float(accountant.get_epsilon(delta))


@lru_cache(maxsize=4096)
def rho_from_epsilon_tight(epsilon: float, delta: float) -> float:
    """Largest ρ whose tight (dp-accounting) conversion stays within (ε, δ)."""
    _check("epsilon", epsilon, 0.0)
    _check("delta", delta, 0.0, 1.0)
    from scipy.optimize import brentq  # scipy.optimize's import: only where a root is sought

    low = rho_from_epsilon(epsilon, delta)
    high = max(low * 4.0, 1e-12)
    while epsilon_from_rho_tight(high, delta) < epsilon:
        high *= 2.0
    return float(brentq(lambda r: epsilon_from_rho_tight(r, delta) - epsilon, low, high,
                        xtol=1e-14, rtol=1e-12))


def gaussian_sigma(sensitivity: float, rho: float) -> float:
    """Gaussian mechanism noise σ = Δ/√(2ρ) for ρ-zCDP (Bun & Steinke 2016, Prop. 1.6)."""
    _check("sensitivity", sensitivity, 0.0)
    _check("rho", rho, 0.0)
    return sensitivity / math.sqrt(2.0 * rho)
