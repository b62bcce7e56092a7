"""Qualitative claims of the papers, each checked against aggregated results with a stated test.

A claim (an entry of `paper/claims.yaml`) names the experiment, the comparison and the test:

    - id: glm_ucb_grows_with_kappa
      paper: glm
      source: "Sec. 8, Table 2"
      text: "GLM-UCB regret grows by more than 50 % from S = 2 to S = 3"
      experiment: glm_table2
      horizon: 5000
      metric: regret
      comparison: {kind: ratio_at_least, a: {algorithm: GLM-UCB, S: 3.0},
                   b: {algorithm: GLM-UCB, S: 2.0}, threshold: 1.5}

Selectors (`a`, `b`, `select`, `chain`, `others`) pick trials as in dpbandits.paper.results;
the statistics come from dpbandits.stats. Strict claims ("A < B", "grows", ...) are reproduced
when the test establishes them at level α; non-strict claims ("A ≤ B", "within [lo, hi]") are
reproduced unless the test contradicts them at level α.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dpbandits import stats
from dpbandits.data.provenance import data_reason
from dpbandits.paper.published import ALPHA
from dpbandits.paper.results import (
    BUDGET_USED,
    SYMBOLS,
    NotComparable,
    NotRun,
    Results,
    column_of,
    describe,
    failed_verdict,
    higher_is_better,
    metric_values,
    select,
    trial_values,
)
from dpbandits.paper.verdict import (
    DIFFERS,
    INCONCLUSIVE,
    INCONSISTENT,
    PRECISION_GATE,
    REPRODUCED,
    Decision,
    combine,
    equivalence,
    one_sided,
    plain,
    trials_for,
)
from dpbandits.seeding import stable_key
from dpbandits.stats import N_BOOT

STATUSES = (REPRODUCED, DIFFERS, INCONCLUSIVE, INCONSISTENT, "not comparable", "not run")


@dataclass
class TestResult:
    """What a comparison measured and its verdict (dpbandits.paper.verdict) with the reason."""

    status: str
    test: str
    measured: str
    estimate: float = math.nan
    p_value: float | None = None
    ci: tuple[float, float] | None = None
    reason: str = ""
    trials_needed: int | None = None

    @property
    def supported(self) -> bool:
        """Whether the verdict is reproduced."""
        return self.status == REPRODUCED


@dataclass
class ClaimResult:
    """One claim's verdict: status ∈ STATUSES, with the reason, the test and what we measured;
    `reading` (how a qualitative word became a number), `explanation` (why it differs, from
    docs/) and `counted` (False for arithmetic and claims with no published counterpart)."""

    id: str
    paper: str
    text: str
    source: str
    experiment: str
    status: str
    reason: str
    test: str = ""
    measured: str = ""
    p_value: float | None = None
    estimate: float = math.nan
    covers: list[str] = field(default_factory=list)
    trials_needed: int | None = None
    reading: str = ""
    explanation: str = ""
    counted: bool = True
    not_counted: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The verdict as JSON-ready data (a non-finite estimate → None)."""
        out = asdict(self)
        out["estimate"] = None if not np.isfinite(self.estimate) else float(self.estimate)
        return out


# ---------------------------------------------------------------------------------------------
# Tests


def _fmt(x: float) -> str:
    return plain(x)


def _pfmt(p: float) -> str:
    return "p < 1e-4" if p < 1e-4 else f"p = {p:.3g}"


def _mean_se(values: np.ndarray) -> str:
    n = len(values)
    se = stats.standard_error(values)
    return f"{_fmt(values.mean())} ± {_fmt(se)} (n = {n})"


def one_sided_t(a: pd.Series, b: pd.Series, greater: bool, test: str = "auto") \
        -> tuple[float, float, str]:
    """p-value of H1: mean(a) > mean(b) (or <): paired t-test over the trials both ran (same
    instance and seed: common random numbers) when `test` is paired_t or auto with ≥ 2 shared
    trials, else Welch's t-test."""
    common = a.index.intersection(b.index)
    paired = test == "paired_t" or (test == "auto" and len(common) >= 2
                                    and len(common) == len(a) == len(b))
    alternative = "greater" if greater else "less"
    if paired:
        if len(common) < 2:
            raise NotComparable("a paired t-test needs at least 2 shared trials")
        x, y = a.loc[common].to_numpy(float), b.loc[common].to_numpy(float)
        diff = x - y
        name = f"paired t-test (n = {len(common)} pairs)"
        if np.allclose(diff, diff[0]):
            return float(diff[0]), (0.0 if (diff[0] > 0) == greater and diff[0] != 0 else 1.0), \
                name
        return (*stats.paired_t_test(x, y, alternative), name)
    x, y = a.to_numpy(float), b.to_numpy(float)
    if len(x) < 2 or len(y) < 2:
        raise NotComparable("Welch's t-test needs at least 2 trials per group")
    name = f"Welch t-test (n = {len(x)}, {len(y)})"
    if x.std() == 0 and y.std() == 0:
        d = x.mean() - y.mean()
        return d, (0.0 if (d > 0) == greater and d != 0 else 1.0), name
    return (*stats.welch_t_test(x, y, alternative), name)


def bootstrap_ratio(a: pd.Series, b: pd.Series, seed: int) -> tuple[float, np.ndarray, bool]:
    """Ratio of means mean(a)/mean(b) and its bootstrap replicates (resampling pairs of trials
    when both ran the same trials, else each group on its own), and whether it paired."""
    common = a.index.intersection(b.index)
    paired = len(common) >= 2 and len(common) == len(a) == len(b)
    if paired:
        x, y = a.loc[common].to_numpy(float), b.loc[common].to_numpy(float)
    else:
        x, y = a.to_numpy(float), b.to_numpy(float)
        if len(x) < 2 or len(y) < 2:
            raise NotComparable("a bootstrap needs at least 2 trials per group")
    return (*stats.bootstrap_ratio(x, y, seed, paired), paired)


def ols_slope(x: np.ndarray, y: np.ndarray, increasing: bool) -> tuple[float, float, float]:
    """OLS slope of y on x, its t statistic and the one-sided p-value of H1: slope > 0 (< 0)."""
    if len(np.unique(x)) < 2 or len(x) < 3:
        raise NotComparable("a slope test needs ≥ 2 grid values and ≥ 3 trials")
    return stats.slope_t_test(x, y, increasing)


# ---------------------------------------------------------------------------------------------
# Comparisons


@dataclass
class Context:
    """What a comparison needs: the summary, metric and test options of one claim."""

    summary: pd.DataFrame
    metric: str
    alpha: float
    test: str
    seed: int

    def values(self, where: dict[str, Any], by: str | None = None) -> pd.Series:
        """The claim's metric per trial for one selector (trial_values)."""
        return trial_values(self.summary, where, self.metric, by)


Comparison = Callable[[Context, dict[str, Any]], TestResult]
COMPARISONS: dict[str, Comparison] = {}
STRICT: dict[str, bool] = {}


def comparison(name: str, strict: bool) -> Callable[[Comparison], Comparison]:
    """Register a comparison kind; `strict` claims need the test to establish them."""
    def wrap(fn: Comparison) -> Comparison:
        COMPARISONS[name] = fn
        STRICT[name] = strict
        return fn

    return wrap


def difference(va: pd.Series, vb: pd.Series) -> tuple[float, float, float, int, str]:
    """(mean(a) − mean(b), its s.e., degrees of freedom, trials, interval name): paired over the
    trials both ran when they ran the same ≥ 2 trials, else Welch."""
    common = va.index.intersection(vb.index)
    if len(common) >= 2 and len(common) == len(va) == len(vb):
        diff = (va.loc[common] - vb.loc[common]).to_numpy(float)
        est, se, df = stats.paired_difference(diff)
        return est, se, df, len(diff), f"paired t interval (n = {len(diff)} pairs)"
    x, y = va.to_numpy(float), vb.to_numpy(float)
    if len(x) < 2 or len(y) < 2:
        raise NotComparable("a t interval needs at least 2 trials per group")
    est, se, df = stats.welch_difference(x, y)
    return est, se, df, min(len(x), len(y)), f"Welch t interval (n = {len(x)}, {len(y)})"


def _order(ctx: Context, a: dict, b: dict, a_greater: bool, strict: bool,
           margin: float = 0.0) -> TestResult:
    """A strict order (one-sided t-test, inconclusive when neither direction is significant) or
    a non-strict one: non-inferiority with `margin` (reproduced when the one-sided 1 − α bound
    of the shortfall is below the margin), never reproduced without a margin."""
    va, vb = ctx.values(a), ctx.values(b)
    _, p, name = one_sided_t(va, vb, a_greater, ctx.test)
    _, p_opp, _ = one_sided_t(va, vb, not a_greater, ctx.test)
    est, se, df, n, _ = difference(va, vb)
    sign = ">" if a_greater else "<"
    measured = (f"{describe(a)}: {_mean_se(va.to_numpy())}; "
                f"{describe(b)}: {_mean_se(vb.to_numpy())}")
    if strict:
        decision = one_sided(est, se, n, p, p_opp, ctx.alpha)
        return TestResult(decision.status, f"one-sided {name}, H1: A {sign} B, α = {ctx.alpha}",
                          measured, est, p, reason=decision.reason,
                          trials_needed=decision.trials_needed)
    shortfall = -est if a_greater else est
    test = f"one-sided {name} of the opposite direction"
    if margin <= 0:
        if p_opp < ctx.alpha:
            decision = Decision(DIFFERS, f"contradicted: the opposite direction is significant "
                                f"(p = {plain(p_opp)})")
        else:
            decision = Decision(INCONCLUSIVE, f"not contradicted (p = {plain(p_opp)}){NO_MARGIN}")
        return TestResult(decision.status, test, measured, est, p_opp, reason=decision.reason)
    q = float(stats.t_margin(se, df, 2 * ctx.alpha)) if se > 0 else 0.0
    upper, lower = shortfall + q, shortfall - q
    if upper < margin and se <= margin / PRECISION_GATE:
        decision = Decision(REPRODUCED, f"shortfall {plain(shortfall)}, one-sided "
                            f"{100 * (1 - ctx.alpha):g} % bound {plain(upper)} < margin "
                            f"{plain(margin)}")
    elif lower > margin:
        decision = Decision(DIFFERS, f"shortfall bound {plain(lower)} > margin {plain(margin)}")
    else:
        decision = Decision(INCONCLUSIVE, f"shortfall {plain(shortfall)}, bound {plain(upper)} "
                            f"against margin {plain(margin)}",
                            trials_for(se * math.sqrt(n), abs(margin - shortfall), ctx.alpha))
    return TestResult(decision.status, f"non-inferiority, margin {plain(margin)}: {test}",
                      measured, est, p_opp, reason=decision.reason,
                      trials_needed=decision.trials_needed)


@comparison("less", strict=True)
def _less(ctx: Context, c: dict[str, Any]) -> TestResult:
    """metric(a) < metric(b)."""
    return _order(ctx, c["a"], c["b"], a_greater=False, strict=True)


@comparison("greater", strict=True)
def _greater(ctx: Context, c: dict[str, Any]) -> TestResult:
    """metric(a) > metric(b)."""
    return _order(ctx, c["a"], c["b"], a_greater=True, strict=True)


@comparison("at_most", strict=False)
def _at_most(ctx: Context, c: dict[str, Any]) -> TestResult:
    """metric(a) ≤ metric(b) (+ margin): non-inferiority, else not contradicted at best."""
    return _order(ctx, c["a"], c["b"], a_greater=False, strict=False,
                  margin=float(c.get("margin", 0.0)))


@comparison("at_least", strict=False)
def _at_least(ctx: Context, c: dict[str, Any]) -> TestResult:
    """metric(a) ≥ metric(b) (− margin): non-inferiority, else not contradicted at best."""
    return _order(ctx, c["a"], c["b"], a_greater=True, strict=False,
                  margin=float(c.get("margin", 0.0)))


NO_MARGIN = "; without a non-inferiority margin no number of trials can establish it"


def _joined(reasons: list[str]) -> str:
    """Reasons of several parts, each once, the missing-margin remark once at the end."""
    bare = [r.replace(NO_MARGIN, "") for r in reasons]
    text = "; ".join(dict.fromkeys(bare))
    return text + (NO_MARGIN if any(NO_MARGIN in r for r in reasons) else "")


def _combined(results: list[TestResult]) -> tuple[str, int | None, str]:
    """Status, trials needed and reason of an intersection–union of parts."""
    status, needed = combine([Decision(r.status, r.reason, r.trials_needed) for r in results])
    chosen = [r.reason for r in results if r.status == status] or [r.reason for r in results]
    return status, needed, _joined(chosen)


@comparison("best", strict=True)
def _best(ctx: Context, c: dict[str, Any]) -> TestResult:
    """metric(a) better than every selector of `others` (intersection-union: all tests at α)."""
    better_high = higher_is_better(ctx.metric)
    results = [_order(ctx, c["a"], other, a_greater=better_high, strict=True)
               for other in c["others"]]
    worst = max(r.p_value or 0.0 for r in results)
    status, needed, reason = _combined(results)
    parts = [part for r in results for part in r.measured.split("; ")]
    return TestResult(status,
                      f"{len(results)} one-sided t-tests (intersection-union, each at α = "
                      f"{ctx.alpha})", "; ".join(dict.fromkeys(parts)),
                      min(r.estimate for r in results), worst, reason=reason,
                      trials_needed=needed)


@comparison("ordering", strict=True)
def _ordering(ctx: Context, c: dict[str, Any]) -> TestResult:
    """metric increases along `chain` (each consecutive pair tested; intersection-union)."""
    chain = c["chain"]
    strict = c.get("strict", True)
    results = [_order(ctx, x, y, a_greater=False, strict=strict,
                      margin=float(c.get("margin", 0.0)))
               for x, y in zip(chain, chain[1:], strict=False)]
    means = [ctx.values(x).mean() for x in chain]
    measured = " ≤ ".join(f"{describe(x)} {_fmt(m)}" for x, m in zip(chain, means, strict=True))
    reversed_pairs = sum(r.estimate > 0 for r in results)
    p = max(r.p_value or 0.0 for r in results) if strict else \
        min(r.p_value if r.p_value is not None else 1.0 for r in results)
    status, needed, reason = _combined(results)
    if reversed_pairs:
        reason += f" ({reversed_pairs} of {len(results)} adjacent pairs reversed in the means)"
    return TestResult(status, f"{len(results)} consecutive {results[0].test.split(',')[0]} "
                      f"(intersection-union)", measured, float(means[-1] - means[0]), p,
                      reason=reason, trials_needed=needed)


def _trend(ctx: Context, c: dict[str, Any], increasing: bool) -> TestResult:
    over = c["over"]
    values = ctx.values(c["select"], by=column_of(ctx.summary, over))
    x = values.index.get_level_values(0).to_numpy(float)
    y = values.to_numpy(float)
    xs = np.log(x) if c.get("log") else x
    slope, t, p = ols_slope(xs, y, increasing)
    _, _, p_opp = ols_slope(xs, y, not increasing)
    se = abs(slope / t) if t and np.isfinite(t) else 0.0
    decision = one_sided(slope, se, len(y), p, p_opp, ctx.alpha) if se > 0 else \
        Decision(REPRODUCED if p < ctx.alpha else DIFFERS, "no spread around the line")
    means = values.groupby(level=0).mean()
    measured = ", ".join(f"{SYMBOLS.get(over, over)} = {_value(k)}: {_fmt(v)}"
                         for k, v in means.items())
    axis = f"log {over}" if c.get("log") else over
    word = "> 0" if increasing else "< 0"
    return TestResult(decision.status, f"OLS slope t-test on {axis} (n = {len(y)}), H1: slope "
                      f"{word}, α = {ctx.alpha}", f"{describe(c['select'])}: {measured}",
                      slope, p, reason=decision.reason, trials_needed=decision.trials_needed)


@comparison("increasing", strict=True)
def _increasing(ctx: Context, c: dict[str, Any]) -> TestResult:
    """metric of `select` grows with column `over` (OLS slope on the trials)."""
    return _trend(ctx, c, increasing=True)


@comparison("decreasing", strict=True)
def _decreasing(ctx: Context, c: dict[str, Any]) -> TestResult:
    """metric of `select` falls with column `over` (OLS slope on the trials)."""
    return _trend(ctx, c, increasing=False)


def _ratio(ctx: Context, c: dict[str, Any], at_most: bool) -> TestResult:
    va, vb = ctx.values(c["a"]), ctx.values(c["b"])
    ratio, reps, paired = bootstrap_ratio(va, vb, ctx.seed)
    threshold = float(c["threshold"])
    upper, lower = (float(np.quantile(reps, q)) for q in (1 - ctx.alpha, ctx.alpha))
    bound, opposite = (upper, lower) if at_most else (lower, upper)
    side = "upper" if at_most else "lower"
    sign = "<" if at_most else ">"
    if (bound < threshold) if at_most else (bound > threshold):
        decision = Decision(REPRODUCED, f"{side} bound {plain(bound)} {sign} {plain(threshold)}")
    elif (opposite > threshold) if at_most else (opposite < threshold):
        decision = Decision(DIFFERS, f"the whole {100 * (1 - 2 * ctx.alpha):g} % interval "
                            f"{plain(lower)} to {plain(upper)} is past {plain(threshold)}")
    else:
        sd = float(reps.std()) * math.sqrt(min(len(va), len(vb)))
        decision = Decision(INCONCLUSIVE, f"the {100 * (1 - 2 * ctx.alpha):g} % interval "
                            f"{plain(lower)} to {plain(upper)} contains {plain(threshold)}",
                            trials_for(sd, abs(ratio - threshold), ctx.alpha))
    kind = "paired" if paired else "unpaired"
    return TestResult(
        decision.status,
        f"{kind} bootstrap ({N_BOOT} resamples) one-sided {100 * (1 - ctx.alpha):g} % {side} "
        f"bound of the ratio of means {sign} {threshold:g}",
        f"{describe(c['a'])} / {describe(c['b'])} = {plain(ratio)} ({side} bound "
        f"{plain(bound)}; {_fmt(va.mean())} / {_fmt(vb.mean())})",
        ratio, None, (bound, bound), reason=decision.reason,
        trials_needed=decision.trials_needed)


@comparison("ratio_at_most", strict=True)
def _ratio_at_most(ctx: Context, c: dict[str, Any]) -> TestResult:
    """mean(a)/mean(b) < threshold, established by the bootstrap upper bound."""
    return _ratio(ctx, c, at_most=True)


@comparison("ratio_at_least", strict=True)
def _ratio_at_least(ctx: Context, c: dict[str, Any]) -> TestResult:
    """mean(a)/mean(b) > threshold, established by the bootstrap lower bound."""
    return _ratio(ctx, c, at_most=False)


def _band(c: dict[str, Any]) -> tuple[float, float]:
    """The claim's [low, high] widened by its stated equivalence `margin` on each side."""
    margin = float(c.get("margin", 0.0))
    return float(c["low"]) - margin, float(c["high"]) + margin


def _band_text(c: dict[str, Any]) -> str:
    low, high = float(c["low"]), float(c["high"])
    text = plain(low) if low == high else f"[{plain(low)}, {plain(high)}]"
    return text + (f" ± margin {plain(float(c['margin']))}" if c.get("margin") else "")


@comparison("ratio_between", strict=False)
def _ratio_between(ctx: Context, c: dict[str, Any]) -> TestResult:
    """low ≤ mean(a)/mean(b) ≤ high: equivalence with the bootstrap 1 − 2α interval."""
    va, vb = ctx.values(c["a"]), ctx.values(c["b"])
    ratio, reps, paired = bootstrap_ratio(va, vb, ctx.seed)
    low, high = _band(c)
    n = min(len(va), len(vb))
    decision = equivalence(ratio, float(reps.std()), n, low, high, ctx.alpha)
    lo, hi = np.quantile(reps, [ctx.alpha, 1 - ctx.alpha])
    return TestResult(
        decision.status,
        f"{'paired' if paired else 'unpaired'} bootstrap {100 * (1 - 2 * ctx.alpha):g} % "
        f"interval of the ratio of means inside {_band_text(c)} (equivalence)",
        f"{describe(c['a'])} / {describe(c['b'])} = {plain(ratio)} "
        f"(interval {plain(lo)} to {plain(hi)})", ratio, None, (float(lo), float(hi)),
        reason=decision.reason, trials_needed=decision.trials_needed)


@comparison("difference_between", strict=False)
def _difference_between(ctx: Context, c: dict[str, Any]) -> TestResult:
    """low ≤ mean(a) − mean(b) ≤ high: equivalence with the 1 − 2α t interval of the difference
    (paired over shared trials, else Welch)."""
    va, vb = ctx.values(c["a"]), ctx.values(c["b"])
    est, se, df, n, name = difference(va, vb)
    low, high = _band(c)
    decision = equivalence(est, se, n, low, high, ctx.alpha, df)
    half = stats.t_margin(se, df, 2 * ctx.alpha)
    return TestResult(
        decision.status,
        f"{100 * (1 - 2 * ctx.alpha):g} % {name} of the difference inside {_band_text(c)} "
        "(equivalence)",
        f"{describe(c['a'])} − {describe(c['b'])} = {_fmt(est)} (interval {_fmt(est - half)} "
        f"to {_fmt(est + half)})", est, None, (est - half, est + half),
        reason=decision.reason, trials_needed=decision.trials_needed)


@comparison("more_variable", strict=True)
def _more_variable(ctx: Context, c: dict[str, Any]) -> TestResult:
    """sd of a's trials > sd of b's trials: one-sided F-test of the variance ratio."""
    x, y = ctx.values(c["a"]).to_numpy(float), ctx.values(c["b"]).to_numpy(float)
    if len(x) < 2 or len(y) < 2:
        raise NotComparable("an F-test needs at least 2 trials per group")
    vx, vy, p = stats.variance_ratio_test(x, y)
    _, _, p_opp = stats.variance_ratio_test(y, x)
    # s.e. of the log variance ratio ≈ 2/√(n − 1) per group pair: its per-trial sd is 2
    decision = one_sided(math.log(vx / vy) if vx > 0 and vy > 0 else 0.0,
                         2 / math.sqrt(min(len(x), len(y)) - 1), min(len(x), len(y)) - 1,
                         p, p_opp, ctx.alpha)
    return TestResult(
        decision.status, f"one-sided F-test of the variance ratio (n = {len(x)}, {len(y)}), "
        f"α = {ctx.alpha}",
        f"sd {describe(c['a'])} = {_fmt(math.sqrt(vx))}, sd {describe(c['b'])} = "
        f"{_fmt(math.sqrt(vy))}", math.sqrt(vx / vy) if vy > 0 else math.inf, p,
        reason=decision.reason, trials_needed=decision.trials_needed)


@comparison("between", strict=False)
def _between(ctx: Context, c: dict[str, Any]) -> TestResult:
    """low ≤ mean metric of `select` ≤ high: equivalence with the 1 − 2α t interval of the mean
    (a floor is a range with a high far above it)."""
    values = ctx.values(c["select"]).to_numpy(float)
    n = len(values)
    if n < 2:
        raise NotComparable("a t interval needs at least 2 trials")
    mean = float(values.mean())
    # identical trials (a deterministic quantity) have no spread, whatever the rounding of sd
    se = 0.0 if np.ptp(values) == 0 else float(stats.standard_error(values))
    low, high = _band(c)
    decision = equivalence(mean, se, n, low, high, ctx.alpha, n - 1)
    half = stats.t_margin(se, n - 1, 2 * ctx.alpha)
    return TestResult(
        decision.status, f"{100 * (1 - 2 * ctx.alpha):g} % t interval of the mean inside "
        f"{_band_text(c)} (equivalence)",
        f"{describe(c['select'])}: {_fmt(mean)} (interval {_fmt(mean - half)} to "
        f"{_fmt(mean + half)}, n = {n})", mean, None, (mean - half, mean + half),
        reason=decision.reason, trials_needed=decision.trials_needed)


@comparison("stable", strict=True)
def _stable(ctx: Context, c: dict[str, Any]) -> TestResult:
    """Relative range (max − min)/min of the group means over `over` < threshold: reproduced when
    the bootstrap upper bound is below it, differs when the lower bound is above it."""
    over = c["over"]
    values = ctx.values(c["select"], by=column_of(ctx.summary, over))
    groups = [g.to_numpy(float) for _, g in values.groupby(level=0)]
    if len(groups) < 2 or min(len(g) for g in groups) < 2:
        raise NotComparable(f"stability over {over} needs ≥ 2 values with ≥ 2 trials each")
    means = np.array([g.mean() for g in groups])
    reps = stats.bootstrap_means(groups, ctx.seed)
    absolute = bool(c.get("absolute"))
    scale, scale_reps = (1.0, 1.0) if absolute else (means.min(), reps.min(axis=1))
    rel = float((means.max() - means.min()) / scale)
    rel_reps = (reps.max(axis=1) - reps.min(axis=1)) / scale_reps
    bound = float(np.quantile(rel_reps, 1 - ctx.alpha))
    lower = float(np.quantile(rel_reps, ctx.alpha))
    threshold = float(c["threshold"])
    if bound < threshold:
        decision = Decision(REPRODUCED, f"upper bound {plain(bound)} < {plain(threshold)}")
    elif lower > threshold:
        decision = Decision(DIFFERS, f"lower bound {plain(lower)} > {plain(threshold)}")
    else:
        sd = float(rel_reps.std()) * math.sqrt(min(len(g) for g in groups))
        decision = Decision(INCONCLUSIVE, f"bounds {plain(lower)} to {plain(bound)} contain "
                            f"{plain(threshold)}", trials_for(sd, abs(threshold - rel),
                                                              ctx.alpha))
    keys = [k for k, _ in values.groupby(level=0)]
    measured = ", ".join(f"{SYMBOLS.get(over, over)} = {_value(k)}: {_fmt(m)}"
                         for k, m in zip(keys, means, strict=True))
    what = "range (max − min)" if absolute else "relative range"
    return TestResult(
        decision.status,
        f"bootstrap ({N_BOOT} resamples) one-sided {100 * (1 - ctx.alpha):g} % upper bound of "
        f"the {what} < {threshold:g}",
        f"{describe(c['select'])}: {measured}; {what} {plain(rel)} (upper bound "
        f"{plain(bound)})", rel, None, (bound, bound), reason=decision.reason,
        trials_needed=decision.trials_needed)


@comparison("within_band", strict=False)
def _within_band(ctx: Context, c: dict[str, Any]) -> TestResult:
    """Every group's mean over `over` lies within ±half_width of the mean of all groups:
    equivalence per group on the per-trial deviation from the trial's mean over the groups."""
    over = c["over"]
    values = ctx.values(c["select"], by=column_of(ctx.summary, over))
    table = values.unstack(level=0)
    if table.shape[1] < 2 or table.isna().any().any() or len(table) < 2:
        raise NotComparable(f"a band over {over} needs ≥ 2 values run on the same ≥ 2 trials")
    half = float(c["half_width"])
    deviation = table.sub(table.mean(axis=1), axis=0)
    parts, texts = [], []
    for key in deviation.columns:
        d = deviation[key].to_numpy(float)
        se = float(stats.standard_error(d))
        parts.append(equivalence(float(d.mean()), se, len(d), -half, half, ctx.alpha,
                                 len(d) - 1))
        texts.append(f"{_value(key)}: {plain(float(d.mean()))} ± {plain(se)}")
    status, needed = combine(parts)
    reason = "; ".join(dict.fromkeys(p.reason for p in parts if p.status == status))
    return TestResult(
        status, f"{100 * (1 - 2 * ctx.alpha):g} % paired t interval of each value's deviation "
        f"from the mean over {over} inside ±{plain(half)} (equivalence, all must hold)",
        f"{describe(c['select'])}: deviations {', '.join(texts)} (n = {len(table)})",
        float(deviation.abs().mean().max()), None, reason=reason, trials_needed=needed)


@comparison("all_at_most", strict=False)
def _all_at_most(ctx: Context, c: dict[str, Any]) -> TestResult:
    """Every trial of `select` has metric ≤ threshold: a claim about every run ("never
    exceeded") on an exact quantity (a privacy ledger's arithmetic), so one trial past the
    threshold, or one whose value is unknown, differs; no statistics."""
    rows = select(ctx.summary, c["select"])
    if rows.empty:
        raise NotRun(f"no results for {describe(c['select'])}")
    values = metric_values(rows, ctx.metric).to_numpy(float)
    threshold = float(c["threshold"])
    limit = threshold * (1 + float(c.get("tolerance", 0.0)))
    past = int(np.sum(~(values <= limit)))  # NaN (unknown) is not below the limit
    finite = values[np.isfinite(values)]
    largest = float(values.max()) if not np.isnan(values).any() else math.nan
    if past == 0:
        decision = Decision(REPRODUCED, f"all {len(values)} trials ≤ {plain(threshold)} "
                            f"(largest {plain(largest)})")
    else:
        unknown = int(np.isnan(values).sum())
        infinite = int(np.isinf(values).sum())
        parts = [f"{past} of {len(values)} trials past {plain(threshold)}"]
        if infinite:
            parts.append(f"{infinite} at ∞")
        if unknown:
            parts.append(f"{unknown} unknown")
        decision = Decision(DIFFERS, ", ".join(parts))
    shown = (f"largest {plain(float(finite.max()))} of the finite values" if len(finite)
             else "no finite value")
    if ctx.metric == BUDGET_USED:  # which side of the budget: ε and δ spent, each over its own
        shown += "".join(
            f"; {name} spent/{name} {_inf(float(np.nanmin(frac)))} to "
            f"{_inf(float(np.nanmax(frac)))}"
            for name, frac in (("ε", _fraction(rows, "epsilon_spent", "epsilon")),
                               ("δ", _fraction(rows, "delta_spent", "delta")))
            if not np.isnan(frac).all())
    return TestResult(
        decision.status, f"every trial ≤ {plain(threshold)} (exact, no statistics)",
        f"{describe(c['select'])}: {shown}; {past} of {len(values)} trials past "
        f"{plain(threshold)}", largest, None, reason=decision.reason)


def _inf(x: float) -> str:
    """A number in plain notation, ∞ written out."""
    return "∞" if x == math.inf else plain(x)


def _fraction(rows: pd.DataFrame, spent: str, budget: str) -> np.ndarray:
    """Per-row spent/budget of a ledger column pair."""
    return (pd.to_numeric(rows[spent], errors="coerce")
            / pd.to_numeric(rows[budget], errors="coerce")).to_numpy(float)


RATE_GRID = np.round(np.arange(-3.0, 1.0 + 1e-9, 0.005), 3)
"""Exponents s searched by the power-law fit of `rate_between` (step 0.005)."""


def power_law_exponent(x: np.ndarray, means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares fit of means ≈ c·x^s on the raw scale (c in closed form for each s of
    RATE_GRID, s by the smallest squared error): (s, c) for each row of `means` (reps × x)."""
    powers = x[None, :] ** RATE_GRID[:, None]               # (grid, x)
    cross = means @ powers.T                                # Σ m·x^s
    norm = (powers ** 2).sum(axis=1)                        # Σ x^{2s}
    sse = (means ** 2).sum(axis=1)[:, None] - cross ** 2 / norm[None, :]
    best = np.argmin(sse, axis=1)
    rows = np.arange(len(means))
    return RATE_GRID[best], cross[rows, best] / norm[best]


@comparison("rate_between", strict=False)
def _rate_between(ctx: Context, c: dict[str, Any]) -> TestResult:
    """The excess mean(a) − mean(b) over the column `over` follows c·x^s with s in [low, high]
    (± margin): least-squares power law on the means, paired bootstrap over the trials both
    ran (4000 resamples), equivalence with its 1 − 2α interval."""
    over = c["over"]
    va = ctx.values(c["a"], by=column_of(ctx.summary, over))
    vb = ctx.values(c["b"])
    table = va.unstack(level=0)
    common = table.index.intersection(vb.index)
    table = table.loc[common]
    if table.shape[1] < 3 or table.isna().any().any() or len(common) < 3:
        raise NotComparable(f"a rate over {over} needs ≥ 3 values run on the same ≥ 3 trials "
                            "as the reference")
    x = table.columns.to_numpy(float)
    if np.any(x <= 0):
        raise NotComparable(f"a power law needs {over} > 0")
    excess = table.to_numpy(float) - vb.loc[common].to_numpy(float)[:, None]  # (trials, x)
    (s_hat,), (c_hat,) = power_law_exponent(x, excess.mean(axis=0)[None, :])
    rng = np.random.default_rng(np.random.SeedSequence(ctx.seed))
    idx = rng.integers(0, len(excess), size=(N_BOOT, len(excess)))
    reps, _ = power_law_exponent(x, excess[idx].mean(axis=1))
    low, high = _band(c)
    n = len(excess)
    decision = equivalence(float(s_hat), float(reps.std()), n, low, high, ctx.alpha)
    lo, hi = np.quantile(reps, [ctx.alpha, 1 - ctx.alpha])
    name = SYMBOLS.get(over, over)
    means = ", ".join(f"{name} = {_value(k)}: {_fmt(m)}"
                      for k, m in zip(x, excess.mean(axis=0), strict=True))
    return TestResult(
        decision.status,
        f"least-squares power law of the mean excess on {name}, paired bootstrap "
        f"({N_BOOT} resamples, n = {n}) {100 * (1 - 2 * ctx.alpha):g} % interval of the "
        f"exponent inside {_band_text(c)} (equivalence)",
        f"{describe(c['a'])} − {describe(c['b'])}: {means}; fit {plain(float(c_hat))}·"
        f"{name}^s, s = {plain(float(s_hat))} (interval {plain(float(lo))} to "
        f"{plain(float(hi))})", float(s_hat), None, (float(lo), float(hi)),
        reason=decision.reason, trials_needed=decision.trials_needed)


def run_comparison(ctx: Context, comp: dict[str, Any]) -> TestResult:
    """Run one comparison; with `for_each: column` run it per value of the column, with a list
    of columns per combination of their values (all must hold: intersection-union)."""
    kind = comp["kind"]
    fn = COMPARISONS[kind]
    column = comp.get("for_each")
    if not column:
        return fn(ctx, comp)
    rest: list[str] = []
    if isinstance(column, list):  # several columns: nested, every combination must hold
        column, rest = column[0], list(column[1:])
    col = column_of(ctx.summary, column)
    values = comp.get("values") or _values_of(ctx.summary, comp, col)
    if not values:
        raise NotComparable(f"no results have a value of {column} for this comparison")
    results = []
    for value in values:
        sub = {k: v for k, v in comp.items() if k not in ("for_each", "values")}
        sub = _with_key(sub, column, value)
        if rest:
            sub["for_each"] = rest
        results.append((value, run_comparison(ctx, sub) if rest else fn(ctx, sub)))
    strict = STRICT[kind]
    ps = [r.p_value for _, r in results if r.p_value is not None]
    p = (max(ps) if strict else min(ps)) if ps else None
    status, needed = combine([Decision(r.status, r.reason, r.trials_needed) for _, r in results])
    name = SYMBOLS.get(column, column)
    reason = _joined([f"{name} = {_value(v)}: {r.reason}" for v, r in results
                      if r.status == status])
    test = results[0][1].test
    test = (test.replace("; for each ", f"; for each {name}, ", 1) if rest
            else f"{test}; for each {name} (all must hold)")
    return TestResult(
        status, test,
        " | ".join(f"{name} = {_value(v)}: {r.measured}" for v, r in results),
        min(r.estimate for _, r in results), p, reason=reason, trials_needed=needed)


def _selectors(comp: dict[str, Any]) -> list[dict[str, Any]]:
    out = [comp[k] for k in ("a", "b", "select") if k in comp]
    return out + [s for k in ("chain", "others") for s in comp.get(k, [])]


def _values_of(summary: pd.DataFrame, comp: dict[str, Any], col: str) -> list[Any]:
    """Values of `col` among the rows any selector of the comparison matches."""
    found: set[Any] = set()
    for where in _selectors(comp):
        try:
            found |= set(select(summary, where)[col].dropna().tolist())
        except NotComparable:
            continue
    return sorted(found)


def _value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def _with_key(comp: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """Add `key: value` to every selector of a comparison."""
    out = dict(comp)
    for name in ("a", "b", "select"):
        if name in out:
            out[name] = {**out[name], key: value}
    for name in ("chain", "others"):
        if name in out:
            out[name] = [{**s, key: value} for s in out[name]]
    return out


# ---------------------------------------------------------------------------------------------
# Verdicts


def evaluate_claim(claim: dict[str, Any], results: Results) -> ClaimResult:
    """Verdict of one claim: reproduced / differs / inconclusive (dpbandits.paper.verdict),
    paper inconsistent (the claim's `inconsistent` arithmetic), not comparable (results at
    another scale, or unable to answer) / not run (no results)."""
    covers = claim.get("covers") or []
    base = dict(id=claim["id"], paper=claim["paper"], text=claim["text"],
                source=claim.get("source", ""), experiment=claim["experiment"],
                covers=covers if isinstance(covers, list) else [covers],
                reading=" ".join(str(claim.get("reading", "")).split()),
                explanation=" ".join(str(claim.get("explanation", "")).split()),
                counted=bool(claim.get("counted", True)),
                not_counted=" ".join(str(claim.get("not_counted", "")).split()))
    name = claim["experiment"]
    if name not in results.experiments:
        return ClaimResult(**base, status="not run",
                           reason=f"experiment {name} is not in the configuration")
    if results.summaries.get(name) is None:
        return ClaimResult(**base, status="not run",
                           reason=f"no results yet (results/{name}/summary.csv)")
    metric = claim.get("metric", "regret")
    horizon = int(results.summaries[name]["T"].max())
    scale = None
    if horizon != int(claim["horizon"]):
        smoke = " (smoke scale)" if horizon < int(claim["horizon"]) else ""
        scale = f"not comparable{smoke}: T = {horizon} here, paper T = {int(claim['horizon'])}"
    scale = "; ".join(r for r in (scale, data_reason(results.summaries[name])) if r) or None
    try:
        summary = results.frame(name, metric, claim.get("reference"))
        ctx = Context(summary, metric, float(claim.get("alpha", ALPHA)),
                      claim.get("test", "auto"), stable_key("claim", claim["id"]))
        result = run_comparison(ctx, claim["comparison"])
    except NotComparable as exc:
        return ClaimResult(**base, **failed_verdict(exc, scale))
    common = dict(test=result.test, measured=result.measured, p_value=result.p_value,
                  estimate=result.estimate)
    if scale:
        return ClaimResult(**base, **common, status="not comparable", reason=scale)
    if claim.get("inconsistent"):
        arithmetic = " ".join(str(claim["inconsistent"]).split())
        return ClaimResult(**base, **common, status=INCONSISTENT,
                           reason=f"{arithmetic} (our test: {result.status}, {result.reason})")
    return ClaimResult(**base, **common, status=result.status, reason=result.reason,
                       trials_needed=result.trials_needed if result.status == INCONCLUSIVE
                       else None)
