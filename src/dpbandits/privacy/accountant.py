"""RDP accountant for DP-SGD noise multipliers, sampled without replacement.

`noise_multiplier(ε, δ, steps, n, batch)` finds σ with eps(σ) = ε, where eps composes `steps`
Gaussian mechanisms with noise multiplier σ on a batch of b of n records sampled without
replacement under the REPLACE_ONE relation (Wang–Balle–Kasiviswanathan 2019, Thm 27), at the
authors' RDP orders (docs/glm.md, "DP-SGD and the RDP accountant"). The default engine evaluates
the same bound as dp-accounting's `RdpAccountant`, exactly to ~1e-10 at every order
(`privacy.wbk`: compiled forward differences, then numpy over all orders at once), where
dp-accounting's own float evaluation cancels to noise at high orders for large σ;
`engine="dp_accounting"` calls the package.
Results are memoised in-process and persisted under `$DPBANDITS_CACHE` (`disk_memo`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from dpbandits.disk_memo import DiskMemo
from dpbandits.errors import ConfigError
from dpbandits.privacy.wbk import EXACT_MAX_ORDER, log_a_ints, log_forward_diffs

BASE_ORDERS: tuple[float, ...] = (1.25, 1.5, 1.75, *map(float, range(2, 65)),
                                  96.0, 128.0, 192.0, 256.0, 384.0, 512.0)
SMALL_EPSILON_ORDERS: tuple[float, ...] = (768.0, 1024.0)
SIGMA_BOUNDS = (1e-5, 4e7)
CACHE_FILE = "accountant-v2.json"
ENGINES = ("fast", "dp_accounting")

_memo = DiskMemo(CACHE_FILE)


def rdp_orders(epsilon: float) -> tuple[float, ...]:
    """The authors' RDP orders: the base set, plus {768, 1024} when ε < 0.3."""
    return BASE_ORDERS + SMALL_EPSILON_ORDERS if epsilon < 0.3 else BASE_ORDERS


# ---------------------------------------------------------------- RDP from the WBK bound


class _OrderPlan(NamedTuple):
    """What the RDP of some orders needs of them alone: the integers next to them whose log A
    is computed (exactly up to 256, by Stirling beyond), and where each order reads log A
    (integer orders at their own index, the others between floor and ceiling with weight
    t = α − ⌊α⌋)."""

    exact: np.ndarray  # the integers ≥ 2 next to the orders, up to EXACT_MAX_ORDER
    stirling: np.ndarray  # those beyond
    size: int  # the log A table's length: the largest integer + 1
    whole: np.ndarray  # positions of the integer orders
    whole_at: np.ndarray  # their indices in the table
    whole_denominator: np.ndarray  # α − 1.0
    mixed: np.ndarray  # positions of the others
    floor: np.ndarray
    ceiling: np.ndarray
    t: np.ndarray
    mixed_denominator: np.ndarray


def _order_plan(orders: np.ndarray) -> _OrderPlan:
    return _order_plan_of(np.ascontiguousarray(orders, dtype=float).tobytes())


@functools.lru_cache(maxsize=64)
def _order_plan_of(orders_key: bytes) -> _OrderPlan:
    """The `_OrderPlan` of the float64 orders whose bytes are `orders_key` (read-only); one
    ConfigError naming orders that are not finite and ≥ 0."""
    orders = np.frombuffer(orders_key, dtype=float)
    if not (np.isfinite(orders).all() and (orders >= 0).all()):
        raise ConfigError(f"orders {orders.tolist()!r} are not allowed; must be finite and "
                          ">= 0")
    ints = {int(math.floor(a)) for a in orders} | {int(math.ceil(a)) for a in orders}
    support = np.array(sorted(a for a in ints if a >= 2), dtype=np.int64)
    whole = np.flatnonzero(orders == np.floor(orders))
    mixed = np.flatnonzero(orders != np.floor(orders))
    floor = np.floor(orders[mixed])
    plan = _OrderPlan(support[support <= EXACT_MAX_ORDER], support[support > EXACT_MAX_ORDER],
                      int(support.max(initial=1)) + 1, whole, orders[whole].astype(np.int64),
                      orders[whole] - 1.0, mixed, floor.astype(np.int64),
                      np.ceil(orders[mixed]).astype(np.int64), orders[mixed] - floor,
                      orders[mixed] - 1.0)
    for array in plan:
        if isinstance(array, np.ndarray):
            array.flags.writeable = False
    return plan


def _rdp_from_log_a(orders: np.ndarray, log_a: np.ndarray) -> np.ndarray:
    """RDP(α) = log A_α/(α − 1), interpolating the CGF between integers (WBK Cor. 10); log_a
    indexed by the integer order."""
    at = _order_plan(orders)
    out = np.empty(orders.shape)
    out[at.whole] = log_a[at.whole_at] / at.whole_denominator
    out[at.mixed] = ((1 - at.t) * log_a[at.floor] + at.t * log_a[at.ceiling]) \
        / at.mixed_denominator
    return out


def _log_a_table(q: float, sigma: float, orders: np.ndarray,
                 deltas: np.ndarray | None = None) -> np.ndarray:
    """log A_k at every integer k next to the orders (log A_0 = log A_1 = 0), indexed by k;
    NaN at the integers not needed."""
    plan = _order_plan(orders)
    log_a = np.full(plan.size, np.nan)
    log_a[:2] = 0.0
    if plan.exact.size or plan.stirling.size:
        need = max(2, int(plan.exact.max(initial=2)))
        if deltas is None or deltas.size < need + 2:
            deltas = log_forward_diffs(sigma, need)
        for group in (plan.exact, plan.stirling):
            if group.size:
                log_a[group] = log_a_ints(q, sigma, group, deltas)
    return log_a


def rdp_sampled_gaussian_wor(q: float, sigma: float, orders: Sequence[float]) -> np.ndarray:
    """RDP at `orders` of one Gaussian step (multiplier σ) on a w/o-replacement sample, q = b/n."""
    orders = np.asarray(orders, dtype=float)
    if q == 0:
        return np.zeros_like(orders)
    if q == 1.0:
        return orders / (2.0 * sigma**2)
    return _rdp_from_log_a(orders, _log_a_table(q, sigma, orders))


def epsilon_from_rdp(orders: Sequence[float], rdp: np.ndarray, delta: float) -> float:
    """RDP → (ε, δ): min over orders α > 1.01 of r + ln(1 − 1/α) − ln(δα)/(α − 1), floored at 0.

    The conversion of Canonne–Kamath–Steinke 2020 (Prop. 12) exactly as dp-accounting applies it.
    """
    return max(0.0, float(_epsilon_each(orders, rdp, delta).min()))


def _epsilon_each(orders: Sequence[float], rdp: np.ndarray, delta: float) -> np.ndarray:
    """`epsilon_from_rdp`'s value at each order before the minimum (elementwise, so each
    entry is what the order alone gives)."""
    orders = np.asarray(orders, dtype=float)
    rdp = np.asarray(rdp, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        formula = rdp + np.log1p(-1.0 / orders) - np.log(delta * orders) / (orders - 1.0)
    eps = np.where(orders > 1.01, formula, np.inf)
    eps = np.where(delta**2 + np.expm1(-rdp) > 0, 0.0, eps)
    return np.where(rdp < 0, 0.0, eps)


LOW_ORDER_MAX = 64


def _epsilon_fast(sigma: float, delta: float, steps: int, q: float,
                  orders: Sequence[float]) -> float:
    """ε of `steps` compositions, with the same value as evaluating every order.

    Orders ≤ 64 and the (cheap) Stirling orders > 256 are evaluated in full. For the costly
    exact orders in (64, 256] the sum of the first 64 terms of log A_α is a lower bound; ε at
    an order is non-decreasing in its RDP, so an order whose bound already exceeds the best ε
    cannot be the minimiser and is skipped.
    """
    orders = np.asarray(orders, dtype=float)
    if q == 1.0 or q == 0:
        return epsilon_from_rdp(orders, steps * rdp_sampled_gaussian_wor(q, sigma, orders), delta)
    mid_mask = (orders > LOW_ORDER_MAX) & (orders <= EXACT_MAX_ORDER)
    cheap, mid = orders[~mid_mask], orders[mid_mask]
    deltas = log_forward_diffs(sigma, LOW_ORDER_MAX)
    rdp = _rdp_from_log_a(cheap, _log_a_table(q, sigma, cheap, deltas))
    best = epsilon_from_rdp(cheap, steps * rdp, delta)
    if mid.size:
        mid_int = mid.astype(np.int64)
        bound = log_a_ints(q, sigma, mid_int, deltas, max_terms=LOW_ORDER_MAX) / (mid - 1.0)
        each = _epsilon_each(mid, steps * bound, delta).tolist()  # each order's own value
        keep = [k for k in range(mid.size) if max(0.0, each[k]) < best]
        if keep:
            need = mid[keep]
            rdp = _rdp_from_log_a(need, _log_a_table(q, sigma, need))
            best = min(best, epsilon_from_rdp(need, steps * rdp, delta))
    return best


def _epsilon_reference(sigma: float, delta: float, steps: int, n: int, batch: int,
                       orders: Sequence[float]) -> float:
    import dp_accounting  # slow to import; only the reference engine needs it

    accountant = dp_accounting.rdp.RdpAccountant(
        list(orders), dp_accounting.NeighboringRelation.REPLACE_ONE
    )
    event: dp_accounting.DpEvent = dp_accounting.GaussianDpEvent(sigma)
    if batch < n:
        event = dp_accounting.SampledWithoutReplacementDpEvent(n, batch, event)
    accountant.compose(event, int(steps))
    return float(accountant.get_epsilon(delta))


# ---------------------------------------------------------------- validation and caching


def _check(epsilon: float, delta: float, steps: int, n: int, batch: int, engine: str) -> None:
    if not (isinstance(epsilon, int | float) and math.isfinite(epsilon) and epsilon > 0):
        raise ConfigError(f"epsilon = {epsilon!r} is not allowed; must be a finite number > 0")
    if not (isinstance(delta, int | float) and 0 < delta < 1):
        raise ConfigError(f"delta = {delta!r} is not allowed; must be in (0, 1)")
    for key, value in (("steps", steps), ("n", n), ("batch", batch)):
        if int(value) != value or value < 1:
            raise ConfigError(f"{key} = {value!r} is not allowed; must be an integer >= 1")
    if batch > n:
        raise ConfigError(f"batch = {batch!r} is not allowed; must be <= n = {n}")
    if engine not in ENGINES:
        raise ConfigError(f"engine = {engine!r} is not allowed; allowed: {', '.join(ENGINES)}")


def clear_memo() -> None:
    """Forget in-process results (the on-disk cache is re-read on next use)."""
    _memo.clear()


def _key(kind: str, engine: str, *args: object) -> str:
    return "|".join([kind, engine, *(repr(float(a)) if isinstance(a, float) else str(a)
                                     for a in args)])


# ---------------------------------------------------------------- public API


def dpsgd_epsilon(sigma: float, delta: float, steps: int, n: int, batch: int,
                  *, target_epsilon: float | None = None, engine: str = "fast") -> float:
    """ε after `steps` steps of noise multiplier σ, batch b of n w/o replacement.

    The orders follow `rdp_orders` for the target ε (`target_epsilon`, default: the result
    computed with the base orders).
    """
    if not (math.isfinite(sigma) and sigma > 0):
        raise ConfigError(f"sigma = {sigma!r} is not allowed; must be a finite number > 0")
    _check(1.0 if target_epsilon is None else target_epsilon, delta, steps, n, batch, engine)
    key = _key("eps", engine, float(sigma), float(delta), int(steps), int(n), int(batch),
               None if target_epsilon is None else float(target_epsilon))
    cached = _memo.get(key)
    if isinstance(cached, float):
        return cached
    orders = BASE_ORDERS if target_epsilon is None else rdp_orders(target_epsilon)
    value = _evaluate(sigma, delta, steps, n, batch, orders, engine)
    _memo.put(key, value)
    return value


def _evaluate(sigma: float, delta: float, steps: int, n: int, batch: int,
              orders: Sequence[float], engine: str) -> float:
    if engine == "fast":
        return _epsilon_fast(sigma, delta, int(steps), batch / n, orders)
    return _epsilon_reference(sigma, delta, int(steps), int(n), int(batch), orders)


def noise_multiplier(epsilon: float, delta: float, steps: int, n: int, batch: int,
                     *, engine: str = "fast") -> float:
    """σ with eps(σ) = ε for `steps` w/o-replacement Gaussian steps (b of n), REPLACE_ONE.

    Root of σ ↦ eps(σ) on [1e-5, 4e7] to relative precision ~1e-7, always on
    the side eps(σ) ≤ ε. (dp-accounting's eps(σ) oscillates at the 1e-3 level for large σ and
    q < 1, through cancellation in its forward differences; ours does not, `privacy.wbk`.)
    The search starts from the closed-form unsampled root, so the result depends on the
    arguments only (never on what was computed before). Raises ConfigError when ε is not
    attainable.
    """
    _check(epsilon, delta, steps, n, batch, engine)
    key = _key("sigma", engine, float(epsilon), float(delta), int(steps), int(n), int(batch))
    cached = _memo.get(key)
    if isinstance(cached, float):
        return cached
    orders = rdp_orders(epsilon)

    def gap(log_sigma: float) -> float:
        return _evaluate(math.exp(log_sigma), delta, steps, n, batch, orders, engine) - epsilon

    lo_b, hi_b = math.log(SIGMA_BOUNDS[0]), math.log(SIGMA_BOUNDS[1])
    guess = _unsampled_sigma(epsilon, delta, steps, orders)
    centre = min(hi_b, max(lo_b, math.log(guess)))
    width = 0.02 if batch < n else 1e-6
    lo, hi = centre - width, centre + width
    step = width
    while gap(lo) < 0:
        if lo <= lo_b:
            raise ConfigError(f"epsilon = {epsilon!r} is not attainable: even sigma = "
                              f"{SIGMA_BOUNDS[0]} is more private; lower the budget")
        step *= 4.0
        lo, hi = max(lo_b, lo - step), lo
    while gap(hi) > 0:
        if hi >= hi_b:
            raise ConfigError(f"epsilon = {epsilon!r} is too small: sigma = {SIGMA_BOUNDS[1]} "
                              "does not reach it")
        step *= 4.0
        lo, hi = hi, min(hi_b, hi + step)
    from scipy.optimize import brentq  # scipy.optimize's import: only where a root is sought

    root = brentq(gap, lo, hi, xtol=1e-7, rtol=1e-12, maxiter=200)
    # Where ε(σ) jumps, the root may sit on the side with ε slightly above target: move to
    # the private side of the final bracket.
    step = 1e-7
    while gap(root) > 0 and root < hi:
        root = min(hi, root + step)
        step *= 2.0
    value = math.exp(root)
    _memo.put(key, value)
    return value


def _unsampled_sigma(epsilon: float, delta: float, steps: int,
                     orders: Sequence[float]) -> float:
    """Closed-form root without sampling: min_α √(steps·α/(2(ε − c_α))) over usable orders."""
    a = np.asarray(orders, dtype=float)
    a = a[a > 1.01]
    c = np.log1p(-1.0 / a) - np.log(delta * a) / (a - 1.0)
    ok = c < epsilon
    if not ok.any():
        return SIGMA_BOUNDS[1]
    return float(np.sqrt(steps * a[ok] / (2.0 * (epsilon - c[ok]))).min())
