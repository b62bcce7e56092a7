"""Clopper–Pearson intervals and ε lower bounds from a threshold distinguisher's error rates.

A mechanism M is (ε, δ)-DP only if, for every event S and neighbouring inputs D0, D1,
P(M(D1) ∈ S) ≤ e^ε P(M(D0) ∈ S) + δ and P(M(D0) ∉ S) ≤ e^ε P(M(D1) ∉ S) + δ. With S the
distinguisher's "D1" decision, FPR = P(M(D0) ∈ S) and FNR = P(M(D1) ∉ S) give
ε ≥ max(ln((1 − δ − FNR)/FPR), ln((1 − δ − FPR)/FNR)) (Kairouz et al. 2015; Jagielski et al.
2020; Nasr et al. 2021). Replacing the rates by one-sided Clopper–Pearson upper bounds turns this
into a lower confidence bound on ε, provided the threshold is chosen on samples not used for the
rates.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy.special import betaincinv

from dpbandits.errors import ConfigError

# The threshold is chosen by the Clopper–Pearson bound at this (stricter) level: it prefers
# thresholds with many events, whose held-out rates are stable (a choice only: validity rests on
# the held-out half).
SELECTION_CONFIDENCE = 0.999


def check_confidence(confidence: float) -> float:
    if not (isinstance(confidence, int | float) and 0.0 < confidence < 1.0):
        raise ConfigError(f"confidence = {confidence!r} is not allowed; must be in (0, 1)")
    return float(confidence)


def cp_upper(k: np.ndarray | int, n: np.ndarray | int, confidence: float) -> np.ndarray:
    """One-sided Clopper–Pearson upper bound on a binomial rate: Beta⁻¹(c; k + 1, n − k)."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        upper = betaincinv(k + 1.0, np.maximum(n - k, 1e-300), confidence)
    return np.where(k >= n, 1.0, upper)


def cp_lower(k: np.ndarray | int, n: np.ndarray | int, confidence: float) -> np.ndarray:
    """One-sided Clopper–Pearson lower bound on a binomial rate: Beta⁻¹(1 − c; k, n − k + 1)."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        lower = betaincinv(np.maximum(k, 1e-300), n - k + 1.0, 1.0 - confidence)
    return np.where(k <= 0, 0.0, lower)


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided Clopper–Pearson interval for a binomial rate at the given confidence."""
    check_confidence(confidence)
    if n <= 0 or not 0 <= k <= n:
        raise ConfigError(f"binomial count k = {k!r} of n = {n!r} is not allowed; need 0 <= k <= n")
    tail = 1.0 - (1.0 - confidence) / 2.0
    return float(cp_lower(k, n, tail)), float(cp_upper(k, n, tail))


def epsilon_from_rates(
    fpr: np.ndarray | float, fnr: np.ndarray | float, delta: float
) -> np.ndarray:
    """ε implied by a test's error rates under (ε, δ)-DP: max of the two hypothesis-test bounds."""
    fpr = np.asarray(fpr, dtype=float)
    fnr = np.asarray(fnr, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log(np.maximum(1.0 - delta - fnr, 0.0)) - np.log(fpr)
        b = np.log(np.maximum(1.0 - delta - fpr, 0.0)) - np.log(fnr)
    out = np.fmax(a, b)
    return np.where(np.isnan(out), -np.inf, out)


@dataclass(frozen=True)
class EpsilonBound:
    """An empirical ε lower bound with the threshold test behind it (held-out half of the runs).

    `epsilon_lb` is the one-sided lower confidence bound at `confidence` (both error rates bounded
    jointly, each at 1 − (1 − confidence)/2), `epsilon_ub` the matching upper end of the interval
    for the chosen test's ε, and `epsilon_hat` the plug-in value from the raw rates.
    """

    epsilon_lb: float
    epsilon_hat: float
    epsilon_ub: float
    threshold: float
    direction: int
    fpr: float
    fnr: float
    n0: int
    n1: int
    confidence: float
    delta: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def _candidate_thresholds(pooled: np.ndarray, max_candidates: int) -> np.ndarray:
    """Unique pooled scores, thinned to ranks spaced geometrically from both tails."""
    values = np.unique(pooled)
    if values.size <= max_candidates:
        return values
    half = max(2, max_candidates // 2)
    ranks = np.unique(np.geomspace(1, values.size // 2, half).astype(np.int64) - 1)
    return np.unique(np.concatenate([values[ranks], values[values.size - 1 - ranks]]))


def _error_counts(
    sorted0: np.ndarray, sorted1: np.ndarray, thresholds: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(FP, FN) counts of "score > τ ⇒ D1" and of "score ≤ τ ⇒ D1" for each threshold τ."""
    above0 = sorted0.size - np.searchsorted(sorted0, thresholds, side="right")
    above1 = sorted1.size - np.searchsorted(sorted1, thresholds, side="right")
    return above0, sorted1.size - above1, sorted0.size - above0, above1


def _bound_from_counts(
    fp: np.ndarray, fn: np.ndarray, n0: int, n1: int, delta: float, confidence: float
) -> np.ndarray:
    tail = 1.0 - (1.0 - confidence) / 2.0
    return epsilon_from_rates(cp_upper(fp, n0, tail), cp_upper(fn, n1, tail), delta)


def _best_threshold(
    sel0: np.ndarray, sel1: np.ndarray, delta: float, confidence: float, max_candidates: int
) -> tuple[float, int, float]:
    """(bound, direction, τ) maximising the Clopper–Pearson bound on sorted samples."""
    thresholds = _candidate_thresholds(np.concatenate([sel0, sel1]), max_candidates)
    fp_up, fn_up, fp_down, fn_down = _error_counts(sel0, sel1, thresholds)
    up = _bound_from_counts(fp_up, fn_up, sel0.size, sel1.size, delta, confidence)
    down = _bound_from_counts(fp_down, fn_down, sel0.size, sel1.size, delta, confidence)
    if np.max(up) >= np.max(down):
        best = int(np.argmax(up))
        return float(up[best]), 1, float(thresholds[best])
    best = int(np.argmax(down))
    return float(down[best]), -1, float(thresholds[best])


def selection_bound(
    scores0: np.ndarray, scores1: np.ndarray, delta: float, confidence: float = 0.95,
    max_candidates: int = 2000,
) -> float:
    """Largest Clopper–Pearson ε bound over thresholds on these samples (for choosing only)."""
    s0 = np.sort(np.asarray(scores0, dtype=float).ravel())
    s1 = np.sort(np.asarray(scores1, dtype=float).ravel())
    if s0.size == 0 or s1.size == 0:
        return -np.inf
    level = max(confidence, SELECTION_CONFIDENCE)
    return _best_threshold(s0, s1, delta, level, max_candidates)[0]


def epsilon_lower_bound(
    scores0: np.ndarray,
    scores1: np.ndarray,
    delta: float,
    confidence: float = 0.95,
    max_candidates: int = 2000,
) -> EpsilonBound:
    """ε lower bound from scalar outputs on D0 (`scores0`) and D1 (`scores1`).

    The first half of each sample chooses the threshold and direction that maximise the
    Clopper–Pearson bound (at SELECTION_CONFIDENCE); the second half, untouched by that choice,
    gives the reported rates.
    """
    check_confidence(confidence)
    if not (isinstance(delta, int | float) and 0.0 <= delta < 1.0):
        raise ConfigError(f"delta = {delta!r} is not allowed; must be in [0, 1)")
    s0 = np.asarray(scores0, dtype=float).ravel()
    s1 = np.asarray(scores1, dtype=float).ravel()
    if s0.size < 4 or s1.size < 4:
        raise ConfigError(f"an audit needs at least 4 runs per input; got {s0.size} and {s1.size}")
    if not (np.all(np.isfinite(s0)) and np.all(np.isfinite(s1))):
        raise ValueError("audit scores must be finite")
    h0, h1 = s0.size // 2, s1.size // 2
    sel0, sel1 = np.sort(s0[:h0]), np.sort(s1[:h1])
    test0, test1 = np.sort(s0[h0:]), np.sort(s1[h1:])

    level = max(confidence, SELECTION_CONFIDENCE)
    _, direction, threshold = _best_threshold(sel0, sel1, delta, level, max_candidates)
    tau = np.array([threshold])

    fp_up, fn_up, fp_down, fn_down = _error_counts(test0, test1, tau)
    fp, fn = (fp_up, fn_up) if direction == 1 else (fp_down, fn_down)
    n0, n1 = test0.size, test1.size
    tail = 1.0 - (1.0 - confidence) / 2.0
    lb = float(epsilon_from_rates(cp_upper(fp, n0, tail), cp_upper(fn, n1, tail), delta)[0])
    ub = float(epsilon_from_rates(cp_lower(fp, n0, tail), cp_lower(fn, n1, tail), delta)[0])
    hat = float(epsilon_from_rates(fp / n0, fn / n1, delta)[0])
    return EpsilonBound(
        epsilon_lb=max(lb, 0.0),
        epsilon_hat=max(hat, 0.0),
        epsilon_ub=max(ub, 0.0),
        threshold=float(tau[0]),
        direction=direction,
        fpr=float(fp[0] / n0),
        fnr=float(fn[0] / n1),
        n0=n0,
        n1=n1,
        confidence=confidence,
        delta=float(delta),
    )


def attainable_bound(n0: int, n1: int, delta: float, confidence: float = 0.95) -> float:
    """The largest lower bound `epsilon_lower_bound` can report with n0, n1 held-out runs (a
    perfect test, no errors): an audit whose claim is above it cannot fail."""
    tail = 1.0 - (1.0 - confidence) / 2.0
    value = float(epsilon_from_rates(cp_upper(0, n0, tail), cp_upper(0, n1, tail), delta))
    return max(value, 0.0)


def linear_statistic(
    features0: np.ndarray, features1: np.ndarray, ridge: float = 1e-6
) -> tuple[np.ndarray, np.ndarray]:
    """Scalar scores from vector outputs: Fisher's discriminant fitted on the selection halves.

    The direction uses only the first half of each sample (the half `epsilon_lower_bound`
    spends on choosing the threshold), so the held-out rates stay valid.
    """
    f0 = np.atleast_2d(np.asarray(features0, dtype=float))
    f1 = np.atleast_2d(np.asarray(features1, dtype=float))
    h0, h1 = f0.shape[0] // 2, f1.shape[0] // 2
    diff = f1[:h1].mean(axis=0) - f0[:h0].mean(axis=0)
    centred = np.vstack([f0[:h0] - f0[:h0].mean(axis=0), f1[:h1] - f1[:h1].mean(axis=0)])
    cov = centred.T @ centred / max(1, centred.shape[0] - 2)
    scale = float(np.trace(cov)) / cov.shape[0]
    if scale > 0:
        w = np.linalg.solve(cov + ridge * scale * np.eye(cov.shape[0]), diff)
    else:
        w = diff
    norm = float(np.linalg.norm(w))
    w = w / norm if norm > 0 else w
    return f0 @ w, f1 @ w


def format_epsilon(value: float) -> str:
    """Compact display of an ε value (∞ for an unbounded test)."""
    return "inf" if math.isinf(value) else f"{value:.4g}"
