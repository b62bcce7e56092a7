"""RDP of the Poisson-subsampled Gaussian, σ calibration for AdaPrivate-TS-Amp, group privacy.

Formulas: Mironov–Talwar–Zhang 2019 for integer orders (AdaPrivate-TS Eq. (15)),
checked against `dp_accounting.rdp.RdpAccountant`; the classic RDP → (ε, δ) conversion
ε = min_α RDP(α) + ln(1/δ)/(α − 1) the paper uses (its Section 3.2; docs/ts.md, "AdaPrivate-TS-Amp
and the subsampled Gaussian").
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from dpbandits.disk_memo import DiskMemo
from dpbandits.errors import ConfigError
from dpbandits.privacy.zcdp import rho_from_epsilon

PAPER_ORDERS: tuple[int, ...] = (2, 3, 4, 5, 6, 8, 16, 32, 64)
EXTENDED_ORDERS: tuple[int, ...] = (*PAPER_ORDERS, 128, 256)
DENSE_ORDERS: tuple[int, ...] = tuple(range(2, 1025))
_captures = DiskMemo("orders-capture-v1.json")  # shared by a run's jobs (disk_memo)
"""Every integer order 2..1024: the unrestricted optimum the paper's orders are compared with."""
RELATIONS = ("add_remove", "replace_one")
CONVERSIONS = ("classic", "tight")
SIGMA_BRACKET = (1e-3, 1e4)


def check_q(q: float) -> None:
    """Sampling rate q ∈ (0, 1], else one ConfigError line."""
    if not isinstance(q, int | float | np.number) or not math.isfinite(q) or not 0 < q <= 1:
        raise ConfigError(f"q = {q!r} is not allowed; must be in the interval (0, 1]")


def _check_positive(name: str, value: float) -> None:
    if not isinstance(value, int | float | np.number) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} = {value!r} is not allowed; must be a finite number > 0")


def _check_delta(delta: float) -> None:
    if not isinstance(delta, int | float | np.number) or not 0 < delta < 1:
        raise ConfigError(f"delta = {delta!r} is not allowed; must be in the open interval (0, 1)")


def _log_rdp_sums(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """ln Σ_{j≤α} C(α,j)(1−q)^{α−j} q^j exp((j²−j)/(2σ²)) for every α at once, in log space."""
    from scipy.special import gammaln, logsumexp  # scipy.special's import: only where it runs

    j = np.arange(int(alphas.max()) + 1, dtype=float)[None, :]
    a = alphas.astype(float)[:, None]
    valid = j <= a
    jj = np.where(valid, j, 0.0)
    log_binom = gammaln(a + 1.0) - gammaln(jj + 1.0) - gammaln(a - jj + 1.0)
    terms = (log_binom + (a - jj) * math.log1p(-q) + jj * math.log(q)
             + (jj * jj - jj) / (2.0 * sigma * sigma))
    return logsumexp(np.where(valid, terms, -np.inf), axis=1)


def rdp_subsampled_gaussian(
    q: float, sigma: float, orders: tuple[int, ...] = PAPER_ORDERS
) -> np.ndarray:
    """RDP ε_sub(α; q, σ) at integer orders, sensitivity 1 (AdaPrivate-TS Eq. 15, MTZ 2019)."""
    check_q(q)
    _check_positive("sigma", sigma)
    alphas = np.asarray(orders)
    if any(int(a) != a or a < 2 for a in orders):
        raise ConfigError(f"RDP orders {orders!r} are not allowed; must be integers >= 2")
    if q == 1:
        return alphas / (2.0 * sigma * sigma)
    return _log_rdp_sums(q, sigma, alphas) / (alphas - 1.0)


def rdp_subsampled_gaussian_dpa(
    q: float, sigma: float, orders: tuple[int, ...] = PAPER_ORDERS
) -> np.ndarray:
    """The same RDP vector from dp-accounting (PoissonSampledDpEvent ∘ GaussianDpEvent)."""
    check_q(q)
    _check_positive("sigma", sigma)
    import dp_accounting

    accountant = dp_accounting.rdp.RdpAccountant(orders=list(orders))
    event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))
    accountant.compose(event)
    return np.asarray(accountant.rdp, dtype=float)


def rdp_replace_one(q: float, sigma: float, orders: tuple[int, ...] = PAPER_ORDERS) -> np.ndarray:
    """RDP bound when one reward is replaced (not added/removed).

    A reward changed from r to r′ passes through the zero reward, whose contribution r·x = 0 is
    the same as an unsampled record; Mironov 2017 Prop. 11 (p = 2) then gives
    D_α(P‖Q) ≤ (α − ½)/(α − 1)·D_{2α}(P‖R) + D_{2α−1}(R‖Q), each bounded by the add/remove RDP.
    """
    alphas = np.asarray(orders, dtype=float)
    even = rdp_subsampled_gaussian(q, sigma, tuple(2 * int(a) for a in orders))
    odd = rdp_subsampled_gaussian(q, sigma, tuple(2 * int(a) - 1 for a in orders))
    return (alphas - 0.5) / (alphas - 1.0) * even + odd


def classic_epsilon(
    rdp: np.ndarray, orders: tuple[int, ...], delta: float
) -> tuple[float, int]:
    """ε = min_α RDP(α) + ln(1/δ)/(α − 1) and the minimising order (paper Sec. 3.2)."""
    _check_delta(delta)
    alphas = np.asarray(orders, dtype=float)
    values = np.asarray(rdp, dtype=float) + math.log(1.0 / delta) / (alphas - 1.0)
    best = int(np.argmin(values))
    return float(values[best]), int(orders[best])


@lru_cache(maxsize=4096)
def amp_epsilon(
    q: float,
    sigma: float,
    delta: float,
    *,
    orders: tuple[int, ...] = PAPER_ORDERS,
    relation: str = "add_remove",
    conversion: str = "classic",
) -> tuple[float, int]:
    """(ε, α*) of one Poisson-subsampled Gaussian release (parallel composition keeps it)."""
    _check_mode(relation, conversion)
    _check_delta(delta)
    if conversion == "tight":
        import dp_accounting

        accountant = dp_accounting.rdp.RdpAccountant(orders=list(orders))
        accountant.compose(
            dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))
        )
        eps, alpha = accountant.get_epsilon_and_optimal_order(delta)
        return float(eps), int(alpha)
    if relation == "replace_one":
        rdp = rdp_replace_one(q, sigma, orders)
    else:
        rdp = rdp_subsampled_gaussian(q, sigma, orders)
    return classic_epsilon(rdp, orders, delta)


def orders_capture(
    q: float,
    sigma: float,
    delta: float,
    *,
    relation: str = "add_remove",
    conversion: str = "classic",
) -> tuple[float, int]:
    """ε minimised over DENSE_ORDERS divided by ε at PAPER_ORDERS, at the same σ, and the dense
    optimum order (AdaPrivate-TS Sec. 5: "α ≤ 64 captures > 99.5 % of the optimal RDP bound")."""
    key = repr((q, sigma, delta, relation, conversion))
    cached = _captures.get(key)
    if cached is not None:
        return float(cached[0]), int(cached[1])
    paper = amp_epsilon(q, sigma, delta, orders=PAPER_ORDERS, relation=relation,
                        conversion=conversion)[0]
    dense, alpha = amp_epsilon(q, sigma, delta, orders=DENSE_ORDERS, relation=relation,
                               conversion=conversion)
    _captures.put(key, [dense / paper, int(alpha)])
    return dense / paper, int(alpha)


def _check_mode(relation: str, conversion: str) -> None:
    if relation not in RELATIONS:
        raise ConfigError(
            f"relation = {relation!r} is not allowed; allowed: {', '.join(RELATIONS)}"
        )
    if conversion not in CONVERSIONS:
        raise ConfigError(
            f"conversion = {conversion!r} is not allowed; allowed: {', '.join(CONVERSIONS)}"
        )
    if conversion == "tight" and relation != "add_remove":
        raise ConfigError("conversion = 'tight' is only available with relation = 'add_remove'")


@lru_cache(maxsize=1024)
def amp_sigma(
    q: float,
    epsilon: float,
    delta: float,
    *,
    orders: tuple[int, ...] = PAPER_ORDERS,
    relation: str = "add_remove",
    conversion: str = "classic",
) -> tuple[float, int]:
    """Smallest σ_amp with ε(q, σ_amp) ≤ ε, and its optimal order (paper Sec. 3.2).

    Root of ε(σ) − ε on ln σ over [1e-3, 1e4] (ε is continuous and decreasing in σ), then
    moved onto the feasible side; an ε that no σ reaches with these orders raises ConfigError.
    """
    check_q(q)
    _check_positive("epsilon", epsilon)
    _check_delta(delta)
    _check_mode(relation, conversion)

    def eps_at(sigma: float) -> float:
        return amp_epsilon(q, sigma, delta, orders=orders, relation=relation,
                           conversion=conversion)[0]

    lo, hi = (math.log(s) for s in SIGMA_BRACKET)
    if eps_at(math.exp(hi)) > epsilon:
        floor = math.log(1.0 / delta) / (max(orders) - 1)
        raise ConfigError(
            f"epsilon = {epsilon!r} is infeasible for the subsampled Gaussian with RDP orders "
            f"<= {max(orders)} at delta = {delta!r}; must be > ln(1/delta)/{max(orders) - 1} = "
            f"{floor:.4f} (or use extended orders)"
        )
    if eps_at(math.exp(lo)) <= epsilon:
        sigma = math.exp(lo)
    else:
        from scipy.optimize import brentq  # scipy.optimize's import: only where a root is sought

        log_sigma = brentq(lambda x: eps_at(math.exp(x)) - epsilon, lo, hi, xtol=1e-13,
                           rtol=1e-14)
        sigma = math.exp(log_sigma)
        while eps_at(sigma) > epsilon:  # land on the feasible side of the root
            sigma *= 1.0 + 1e-12
    return sigma, amp_epsilon(q, sigma, delta, orders=orders, relation=relation,
                              conversion=conversion)[1]


def group_rho(rho: float, k: int) -> float:
    """Per-event budget that protects k events of one user: ρ_user/k² (zCDP group privacy)."""
    _check_positive("rho", rho)
    if not isinstance(k, int | np.integer) or k < 1:
        raise ConfigError(f"k = {k!r} is not allowed; must be an integer >= 1")
    return float(rho) / float(k) ** 2


def group_privacy_rho(epsilon_user: float, delta: float, k: int) -> float:
    """ρ per event for a user-level (ε_user, δ) guarantee over k events.

    The paper's last paragraph (group privacy); docs/ts.md, "Group privacy".
    """
    return group_rho(rho_from_epsilon(epsilon_user, delta), k)
