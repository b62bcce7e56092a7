"""Every statistic of the claims, the figures and tables, and the reproduction report.

Samples are one value per trial (NumPy arrays or pandas Series: their own `std`/`var` are used,
so a function gives exactly the numbers its callers computed inline before). Functions assume
enough values; the callers decide what too few trials means (a claim is "not comparable", a
table shows a dash). t and F quantiles and p-values come from scipy.special (what scipy.stats
evaluates itself), with the t-tests and the regression slope computed as scipy.stats computes
them: importing scipy.stats costs a second in every job that draws a figure or writes the report.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import special

Sample = np.ndarray | pd.Series

Z95 = 1.959963984540054
"""Standard normal 0.975 quantile: a two-sided 95 % band is mean ± Z95 · s.e."""
Z95_ONE_SIDED = 1.6448536269514722
"""Standard normal 0.95 quantile: the one-sided 95 % bound."""
N_BOOT = 4000
"""Bootstrap resamples."""


def sample_sd(values: Sample) -> float:
    """Sample standard deviation (n − 1 in the denominator); 0 for fewer than two values."""
    return float(values.std(ddof=1)) if len(values) > 1 else 0.0


def standard_error(values: Sample) -> float:
    """Standard error of the mean, sd/√n with the n − 1 sd; nan for fewer than two values,
    exactly 0 when every value is the same (the float sd would be rounding noise)."""
    n = len(values)
    if n < 2:
        return math.nan
    flat = np.asarray(values)
    if np.all(flat == flat[0]):
        return 0.0
    return values.std(ddof=1) / np.sqrt(n)


def t_half_width(values: Sample, alpha: float = 0.05) -> float:
    """Half-width t_{1−α/2, n−1} · sd/√n of the two-sided t-interval of the mean; nan if n < 2."""
    n = len(values)
    if n < 2:
        return math.nan
    return float(special.stdtrit(n - 1, 1 - alpha / 2) * values.std(ddof=1) / math.sqrt(n))


def t_margin(se: float, df: float, alpha: float = 0.05) -> float:
    """Half-width t_{1−α/2, df} · se of a two-sided t-interval with a given s.e. and df."""
    return float(special.stdtrit(df, 1 - alpha / 2) * se)


def paired_difference(diff: np.ndarray) -> tuple[float, float, int]:
    """(mean, s.e., degrees of freedom) of paired differences, for a paired t-interval."""
    n = len(diff)
    return float(diff.mean()), float(diff.std(ddof=1) / math.sqrt(n)), n - 1


def welch_difference(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """(mean(x) − mean(y), its s.e., Welch–Satterthwaite degrees of freedom)."""
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    est, se = float(x.mean() - y.mean()), math.sqrt(vx + vy)
    df = (vx + vy) ** 2 / (vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1)) if se > 0 else 1
    return est, se, df


def t_p_value(t: float, df: float, alternative: str = "two-sided") -> float:
    """p-value of a t statistic with df degrees of freedom; `alternative` names H1 as
    scipy.stats does: "two-sided", "less" (mean below) or "greater"."""
    if alternative == "less":
        return float(special.stdtr(df, t))
    if alternative == "greater":
        return float(special.stdtr(df, -t))
    if alternative == "two-sided":
        return float(2 * special.stdtr(df, -abs(t)))
    raise ValueError(f"alternative = {alternative!r} is not allowed; "
                     "allowed: two-sided, less, greater")


def paired_t_test(x: Sample, y: Sample, alternative: str = "two-sided") -> tuple[float, float]:
    """(t statistic, p-value) of the paired t-test of mean(x − y) = 0 (scipy.stats.ttest_rel)."""
    diff = np.asarray(x, dtype=float) - np.asarray(y, dtype=float)
    n = len(diff)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = float(np.divide(diff.mean(), np.sqrt(_variance(diff) / n)))
    return t, t_p_value(t, n - 1, alternative)


def welch_t_test(x: Sample, y: Sample, alternative: str = "two-sided") -> tuple[float, float]:
    """(t statistic, p-value) of Welch's unequal-variance t-test of mean(x) = mean(y)
    (scipy.stats.ttest_ind with equal_var=False)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    vx, vy = _variance(x) / len(x), _variance(y) / len(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.divide((vx + vy) ** 2, vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1))
        t = float(np.divide(x.mean() - y.mean(), np.sqrt(vx + vy)))
    return t, t_p_value(t, 1.0 if np.isnan(df) else float(df), alternative)


def _variance(x: np.ndarray) -> float:
    """Sample variance (n − 1) as scipy.stats forms it: mean squared deviation · n/(n − 1)."""
    n = np.float64(len(x))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.mean((x - x.mean()) ** 2) * (n / (n - 1))


def variance_ratio_test(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """(var x, var y, p) of the one-sided F-test of H1: var(x) > var(y) (p 0/1 when var y = 0)."""
    vx, vy = x.var(ddof=1), y.var(ddof=1)
    if vy == 0:
        return vx, vy, 0.0 if vx > 0 else 1.0
    return vx, vy, float(special.fdtrc(len(x) - 1, len(y) - 1, vx / vy))


def slope_t_test(x: np.ndarray, y: np.ndarray, increasing: bool) -> tuple[float, float, float]:
    """OLS slope of y on x, its t statistic and the one-sided p-value of H1: slope > 0 (< 0)."""
    slope, stderr = _least_squares_slope(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    if stderr == 0:
        good = (slope > 0) == increasing and slope != 0
        return slope, math.inf if good else -math.inf, 0.0 if good else 1.0
    t = slope / stderr
    return slope, float(t), t_p_value(t, len(x) - 2, "greater" if increasing else "less")


def _least_squares_slope(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(slope, its standard error) of the OLS line of y on x, as scipy.stats.linregress."""
    if len(x) < 2 or np.all(x == x[0]):
        raise ValueError("a slope needs at least two distinct x values")
    ssxm, ssxym, _, ssym = np.cov(x, y, bias=True).flat
    slope = ssxym / ssxm
    if len(x) == 2:
        return float(slope), 0.0
    if ssxm == 0.0 or ssym == 0.0:
        r = math.nan if ssxym == 0 else 0.0
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            r = ssxym / np.sqrt(ssxm * ssym)
        r = 1.0 if r > 1.0 else -1.0 if r < -1.0 else r
    return float(slope), float(np.sqrt((1 - r**2) * ssym / ssxm / (len(x) - 2)))


def ratio_of_means(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """mean(a)/mean(b) of paired values and its delta-method s.e. (nan for one pair)."""
    r = a.mean() / b.mean()
    if len(a) < 2:
        return float(r), math.nan
    resid = a - r * b
    return float(r), float(resid.std(ddof=1) / math.sqrt(len(a)) / b.mean())


def bootstrap_ratio(x: np.ndarray, y: np.ndarray, seed: int, paired: bool,
                    n_boot: int = N_BOOT) -> tuple[float, np.ndarray]:
    """mean(x)/mean(y) and its bootstrap replicates (pairs resampled together when paired)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    if paired:
        idx = rng.integers(0, len(x), size=(n_boot, len(x)))
        reps = x[idx].mean(axis=1) / y[idx].mean(axis=1)
    else:
        reps = (x[rng.integers(0, len(x), size=(n_boot, len(x)))].mean(axis=1)
                / y[rng.integers(0, len(y), size=(n_boot, len(y)))].mean(axis=1))
    return float(x.mean() / y.mean()), reps


def bootstrap_means(groups: list[np.ndarray], seed: int, n_boot: int = N_BOOT) -> np.ndarray:
    """Bootstrap replicates of each group's mean, resampled within the group: (n_boot, groups)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    return np.stack([g[rng.integers(0, len(g), size=(n_boot, len(g)))].mean(axis=1)
                     for g in groups], axis=1)
