"""The Wang–Balle–Kasiviswanathan bound (WBK 2019, Thm 27) on log A_α of the Gaussian mechanism
on a sample drawn without replacement, for integer orders α ≥ 2.

`log_forward_diffs` gives log|Δ^k| at 0 of (1, e^{cgf(0)}, e^{cgf(1)}, …), cgf(x) = x(x + 1)/(2σ²),
by the log-magnitude-and-sign recursion of dp-accounting's `_get_forward_diffs` where that is
accurate, and by a series of positive terms where the recursion cancels (large σ, high
orders: there dp-accounting's values are rounding noise, e.g. e^{+5} for the exact e^{−170} of
Δ^65 at σ = 70); `log_a_ints`
sums the theorem's terms in log space, exactly up to α = 256 and with the Stirling-type bound
beyond (dp-accounting's `_compute_rdp_sample_wor_gaussian_int`), every order at once.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from dpbandits.errors import ConfigError
from dpbandits.jit import jit

EXACT_MAX_ORDER = 256  # dp-accounting's exact/Stirling switch for integer orders

_LOG2 = math.log(2.0)
_LOG4 = math.log(4.0)


def gammaln(x: np.ndarray) -> np.ndarray:
    """ln Γ(x), scipy.special's (imported where first used)."""
    from scipy.special import gammaln as scipy_gammaln

    return scipy_gammaln(x)


@jit
def forward_diffs_kernel(scale: float, n: int) -> np.ndarray:
    """log|Δ^{i+1}| at 0 of (1, e^{cgf(0)}, …, e^{cgf(n+1)}), cgf(x) = x(x + 1)/scale, for
    i = 0..n+1 (WBK 2019, Thm 27): each row of the difference triangle from the one above,
    as log-magnitudes and signs (a − b of two positives: log1p(−e^{−gap}); of mixed signs:
    log1p(e^{−gap})), a cancelled entry as −∞."""
    vec = np.empty(n + 3)
    positive = np.ones(n + 3, dtype=np.bool_)
    vec[0] = 0.0
    for k in range(n + 2):
        x = float(k)
        vec[k + 1] = x * (x + 1.0) / scale
    deltas = np.empty(n + 2)
    for i in range(n + 2):
        for j in range(n + 2 - i):
            a = vec[j]
            b = vec[j + 1]
            hi = a if a >= b else b
            e = math.exp(-abs(b - a))
            if positive[j] == positive[j + 1]:
                value = hi + math.log1p(-e) if e < 1.0 else -math.inf
                positive[j] = (b >= a) == positive[j + 1]
            else:
                value = hi + math.log1p(e)
                positive[j] = positive[j + 1]
            vec[j] = -math.inf if math.isnan(value) else value
        deltas[i] = vec[0]
    return deltas


@jit
def _add_scaled(m: np.ndarray, e: np.ndarray, k: int, terms_m: np.ndarray,
                terms_e: np.ndarray) -> None:
    """(m[k], e[k]) ← the sum of the nonnegative terms m_t·2^{e_t}, as a mantissa in [½, 1) and
    an integer exponent (relative rounding only: no range limit, no cancellation)."""
    top = -(2**62)
    for t in range(terms_m.shape[0]):
        if terms_m[t] > 0.0 and terms_e[t] > top:
            top = terms_e[t]
    if top == -(2**62):
        m[k] = 0.0
        e[k] = 0
        return
    total = 0.0
    for t in range(terms_m.shape[0]):
        if terms_m[t] > 0.0 and terms_e[t] - top > -1100:
            total += math.ldexp(terms_m[t], terms_e[t] - top)
    mantissa, exponent = math.frexp(total)
    m[k] = mantissa
    e[k] = top + exponent


@jit
def series_kernel(c: float, n: int, max_steps: int) -> np.ndarray:
    """log Δ^m at 0, m = 1..n+2, of g(k) = e^{c k(k − 1)} (the sequence (1, e^{cgf(0)}, …) with
    c = 1/(2σ²)) as a sum of positive terms: (k(k − 1))^r = Σ_j b_{r,j} k^{(j)} (falling
    factorials, b_{r+1,j} = b_{r,j−2} + 2(j − 1) b_{r,j−1} + j(j − 1) b_{r,j} ≥ 0) and
    Δ^m k^{(j)} = m! [j = m] give Δ^m g(0) = m! Σ_r h_r(m), h_r(j) = c^r b_{r,j}/r!. Every
    h_r(j) and sum is a mantissa with an integer power of 2 (no overflow or underflow, only
    relative rounding). The sum stops once r + 1 ≥ 2c(n + 3)² (each further term at most half
    the one before) and the last terms are below 2^{−64} of their sums. Empty when that takes
    more than `max_steps` terms (small σ: the difference triangle does not cancel there)."""
    size = n + 3
    if 2.0 * c * size * size > max_steps:
        return np.empty(0)
    hm = np.zeros(size)
    he = np.zeros(size, dtype=np.int64)
    hm[0] = 0.5
    he[0] = 1  # h_0(0) = 1
    tm = hm.copy()
    te = he.copy()
    nm = np.zeros(size)
    ne = np.zeros(size, dtype=np.int64)
    terms_m = np.empty(3)
    terms_e = np.empty(3, dtype=np.int64)
    pair_m = np.empty(2)
    pair_e = np.empty(2, dtype=np.int64)
    for r in range(max_steps + size):
        scale = c / (r + 1.0)
        for j in range(2, size):
            terms_m[0] = scale * hm[j - 2]
            terms_e[0] = he[j - 2]
            terms_m[1] = scale * 2.0 * (j - 1) * hm[j - 1]
            terms_e[1] = he[j - 1]
            terms_m[2] = scale * j * (j - 1.0) * hm[j]
            terms_e[2] = he[j]
            _add_scaled(nm, ne, j, terms_m, terms_e)
        small = True
        for j in range(2, size):
            hm[j] = nm[j]
            he[j] = ne[j]
            pair_m[0] = tm[j]
            pair_e[0] = te[j]
            pair_m[1] = hm[j]
            pair_e[1] = he[j]
            _add_scaled(tm, te, j, pair_m, pair_e)
            if tm[j] == 0.0 or (hm[j] > 0.0 and he[j] - te[j] > -64):
                small = False
        hm[0] = 0.0
        hm[1] = 0.0
        if small and r + 2.0 >= 2.0 * c * size * size:
            break
    out = np.empty(n + 2)
    for m in range(1, n + 3):
        out[m - 1] = -math.inf if tm[m] == 0.0 else \
            math.lgamma(m + 1.0) + math.log(tm[m]) + te[m] * _LOG2
    return out


SERIES_MAX_STEPS = 4200  # the positive series is summed for 2c(n + 3)² up to this
AGREE = 1e-10  # the triangle's value is kept where it is within this of the series's (in log)


def log_forward_diffs(sigma: float, n: int) -> np.ndarray:
    """log|Δ^{i+1}| at 0 of (1, e^{cgf(0)}, e^{cgf(1)}, …), i = 0..n+1, cgf(x) = x(x + 1)/(2σ²).

    The difference triangle (`forward_diffs_kernel`, dp-accounting's recursion) cancels
    catastrophically for large σ at high orders; there each value is replaced by the positive
    series of `series_kernel`, which has no cancellation. Where the two agree to `AGREE` the
    triangle's value is kept bit for bit.
    """
    if int(n) != n or n < 0:
        raise ValueError(f"n = {n!r} is not allowed; must be an integer >= 0")
    scale = 2.0 * float(sigma) ** 2
    deltas = forward_diffs_kernel(scale, int(n))
    series = series_kernel(1.0 / scale, int(n), SERIES_MAX_STEPS)
    if series.size:
        with np.errstate(invalid="ignore"):
            agree = np.abs(deltas - series) <= AGREE
        agree |= (deltas == -math.inf) & (series == -math.inf)
        deltas = np.where(agree, deltas, series)
    return deltas


class OrderGrid(NamedTuple):
    """What `log_a_ints` needs of its orders α and terms i = 2 … top, whatever σ and q are."""

    i: np.ndarray  # the term indices, as floats
    exact: np.ndarray  # (orders,): α ≤ 256, summed exactly
    n_exact: int
    lo_idx: np.ndarray  # forward-difference indices of the exact terms' bound
    hi_idx: np.ndarray
    log_comb: np.ndarray  # ln C(α, i)
    inside: np.ndarray  # i ≤ α


@functools.lru_cache(maxsize=64)
def order_grid(alphas_key: bytes, top_order: int) -> OrderGrid:
    """The `OrderGrid` of the int64 orders whose bytes are `alphas_key` (read-only arrays)."""
    alphas = np.frombuffer(alphas_key, dtype=np.int64)
    i = np.arange(2, top_order + 1, dtype=float)
    ii = np.arange(2, top_order + 1)
    exact = alphas <= EXACT_MAX_ORDER
    n_exact = min(top_order, max(2, int(alphas[exact].max(initial=2))))
    alpha = alphas[:, None].astype(float)
    log_comb = gammaln(alpha + 1.0) - gammaln(i + 1.0) - gammaln(np.maximum(alpha - i, 0) + 1.0)
    grid = OrderGrid(i, exact, n_exact, 2 * (ii[: n_exact - 1] // 2) - 1,
                     2 * ((ii[: n_exact - 1] + 1) // 2) - 1, log_comb, i[None, :] <= alpha)
    for array in (grid.i, grid.exact, grid.lo_idx, grid.hi_idx, grid.log_comb, grid.inside):
        array.flags.writeable = False  # shared by every call with these orders
    return grid


@jit
def log_a_kernel(log_q: float, scale: float, first: float, i: np.ndarray, exact: np.ndarray,
                 lo_idx: np.ndarray, hi_idx: np.ndarray, deltas: np.ndarray,
                 log_comb: np.ndarray, inside: np.ndarray) -> np.ndarray:
    """log A_α = log(1 + Σ_{i=2}^{α} e^{s_i}) of WBK 2019 Thm 27 for each order (a row of
    `log_comb`): s_2 = 2 ln q + ln C(α, 2) + `first`; s_i = i ln q + ln C(α, i) + min(ln 4 +
    ½(ln|Δ^{2⌊i/2⌋}| + ln|Δ^{2⌈i/2⌉}|), ln 2 + cgf(i − 1)) for exact orders, without the
    forward differences (ln 2 + cgf(i − 1)) for the others; summed as m = max(s, 0) plus the
    log of the exponentials shifted by m."""
    orders, terms = log_comb.shape
    tight = np.empty(terms)
    loose = np.empty(terms)
    for t in range(terms):
        bound = _LOG2 + (i[t] - 1.0) * i[t] / scale
        cut = math.inf
        if t < lo_idx.shape[0]:
            cut = min(_LOG4 + 0.5 * (deltas[lo_idx[t]] + deltas[hi_idx[t]]), bound)
        tight[t] = cut + i[t] * log_q
        loose[t] = bound + i[t] * log_q
    out = np.empty(orders)
    row = np.empty(terms)
    for o in range(orders):
        base = tight if exact[o] else loose
        top = 0.0
        for t in range(terms):
            value = -math.inf
            if inside[o, t]:
                if t == 0:
                    value = 2.0 * log_q + log_comb[o, 0] + first
                else:
                    value = base[t] + log_comb[o, t]
            row[t] = value
            top = max(top, value)
        total = 0.0
        for t in range(terms):
            total += math.exp(row[t] - top)
        out[o] = math.log1p(total) if top == 0.0 else top + math.log(math.exp(-top) + total)
    return out


def log_a_ints(q: float, sigma: float, alphas: np.ndarray, deltas: np.ndarray,
               max_terms: int | None = None) -> np.ndarray:
    """log A_α of WBK Thm 27 for integer orders α ≥ 2 (exact for α ≤ 256, Stirling beyond).

    `deltas` (from `log_forward_diffs`) must reach the largest exact order used. With
    `max_terms`, only the terms i ≤ max_terms are summed: a lower bound of the full value (all
    terms are positive).
    """
    orders = np.asarray(alphas)
    if orders.dtype.kind not in "iu":
        raise ConfigError(f"orders {orders!r} are not allowed; must be integers (int arrays)")
    scale = 2.0 * sigma**2
    f2 = 2.0 / scale
    first = min(_LOG4 + f2 + math.log1p(-math.exp(-f2)), f2 + _LOG2)
    top_order = int(orders.max()) if max_terms is None else min(int(orders.max()), max_terms)
    grid = order_grid(np.ascontiguousarray(orders, dtype=np.int64).tobytes(), top_order)
    if grid.hi_idx.size and grid.hi_idx[-1] >= deltas.size:
        raise ValueError(f"deltas of {deltas.size} values is not allowed; must reach index "
                         f"{grid.hi_idx[-1]}")
    return log_a_kernel(math.log(q), scale, first, grid.i, grid.exact, grid.lo_idx,
                        grid.hi_idx, np.ascontiguousarray(deltas, dtype=float), grid.log_comb,
                        grid.inside)
