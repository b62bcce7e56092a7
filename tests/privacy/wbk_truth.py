"""The WBK 2019 Thm 27 bound in exact arithmetic (mpmath), the machine-independent truth that
the float64 forward differences and RDP values are compared with."""

from __future__ import annotations

import functools
import math

import mpmath
import numpy as np

CHECK = mpmath.mpf(10) ** -30  # two working precisions must agree to this (relative)


def _diffs(sigma: float, n: int, dps: int) -> list[mpmath.mpf]:
    """Δ^{i+1} at 0 of (1, e^{cgf(0)}, …, e^{cgf(n+1)}), i = 0..n+1, cgf(x) = x(x + 1)/(2σ²),
    from the difference triangle in `dps` digits (σ taken exactly as its float64 value)."""
    with mpmath.workdps(dps):
        s2 = 2 * mpmath.mpf(float(sigma)) ** 2
        row = [mpmath.mpf(1)] + [mpmath.exp(mpmath.mpf(k * (k + 1)) / s2) for k in range(n + 2)]
        out = []
        for _ in range(n + 2):
            row = [row[j + 1] - row[j] for j in range(len(row) - 1)]
            out.append(row[0])
        return out


@functools.lru_cache(maxsize=32)
def exact_diffs(sigma: float, n: int) -> tuple[mpmath.mpf, ...]:
    """`_diffs` at a precision where doubling it changes no value by 1e-30 (relative)."""
    dps = 200
    while True:
        low, high = _diffs(sigma, n, dps), _diffs(sigma, n, 2 * dps)
        with mpmath.workdps(2 * dps):
            if all(abs(a - b) <= CHECK * abs(b) for a, b in zip(low, high, strict=True)):
                return tuple(high)
        dps *= 2


def true_log_diffs(sigma: float, n: int) -> np.ndarray:
    """log|Δ^{i+1}|, i = 0..n+1, correctly rounded to float64 (−∞ for an exact zero)."""
    with mpmath.workdps(60):
        return np.array([float(mpmath.log(abs(d))) if d else -math.inf
                         for d in exact_diffs(sigma, n)])


def true_log_a(q: float, sigma: float, alpha: int, exact_max: int = 256) -> mpmath.mpf:
    """log A_α of WBK Thm 27 for one integer order: 1 + Σ_{i≥2} q^i C(α, i) t_i with
    t_2 = min(4(e^{1/σ²} − 1), 2e^{1/σ²}), t_i = min(4√(|Δ^{2⌊i/2⌋}| |Δ^{2⌈i/2⌉}|),
    2e^{cgf(i−1)}) (only 2e^{cgf(i−1)} beyond `exact_max`, as dp-accounting)."""
    d = exact_diffs(sigma, max(alpha, 2)) if alpha <= exact_max else ()
    with mpmath.workdps(100):
        s2 = 2 * mpmath.mpf(float(sigma)) ** 2
        qq = mpmath.mpf(float(q))
        total = mpmath.mpf(1)
        for i in range(2, alpha + 1):
            cap = 2 * mpmath.exp(mpmath.mpf((i - 1) * i) / s2)
            if i == 2:
                term = min(4 * mpmath.expm1(2 / s2), cap)
            elif alpha <= exact_max:
                lo, hi = d[2 * (i // 2) - 1], d[2 * ((i + 1) // 2) - 1]
                term = min(4 * mpmath.sqrt(abs(lo) * abs(hi)), cap)
            else:
                term = cap
            total += qq**i * mpmath.binomial(alpha, i) * term
        return mpmath.log(total)


def true_rdp(q: float, sigma: float, orders: list[float]) -> np.ndarray:
    """RDP(α) = log A_α/(α − 1), the CGF interpolated linearly between integers (WBK Cor. 10)."""
    out = []
    for a in orders:
        lo, hi = math.floor(a), math.ceil(a)
        log_a = [mpmath.mpf(0) if k < 2 else true_log_a(q, sigma, k) for k in (lo, hi)]
        t = a - lo
        with mpmath.workdps(100):
            out.append(float(((1 - t) * log_a[0] + t * log_a[1]) / (a - 1)))
    return np.array(out)
