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
    NotComparable,
    Results,
    column_of,
    describe,
    failed_verdict,
    higher_is_better,
    select,
    trial_values,
)
from dpbandits.seeding import stable_key
from dpbandits.stats import N_BOOT

STATUSES = ("reproduced", "differs", "not comparable", "not run")


@dataclass
class TestResult:
    """What a comparison measured and whether its test supports the claim."""

    supported: bool
    test: str
    measured: str
    estimate: float = math.nan
    p_value: float | None = None
    ci: tuple[float, float] | None = None


@dataclass
class ClaimResult:
    """One claim's verdict: status ∈ STATUSES, with the reason, the test and what we measured."""

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

    def as_dict(self) -> dict[str, Any]:
        """The verdict as JSON-ready data (a non-finite estimate → None)."""
        out = asdict(self)
        out["estimate"] = None if not np.isfinite(self.estimate) else float(self.estimate)
        return out


# ---------------------------------------------------------------------------------------------
# Tests


def _fmt(x: float) -> str:
    if x is None or not np.isfinite(x):
        return "nan"
    return f"{x:.4g}"


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


def _order(ctx: Context, a: dict, b: dict, a_greater: bool, strict: bool) -> TestResult:
    va, vb = ctx.values(a), ctx.values(b)
    stat, p, name = one_sided_t(va, vb, a_greater, ctx.test)
    sign = ">" if a_greater else "<"
    measured = (f"{describe(a)}: {_mean_se(va.to_numpy())}; "
                f"{describe(b)}: {_mean_se(vb.to_numpy())}")
    if strict:
        return TestResult(p < ctx.alpha, f"one-sided {name}, H1: A {sign} B, α = {ctx.alpha}",
                          measured, float(va.mean() - vb.mean()), p)
    _, p_opp, _ = one_sided_t(va, vb, not a_greater, ctx.test)
    return TestResult(p_opp >= ctx.alpha,
                      f"one-sided {name} of the opposite direction, contradicted if p < "
                      f"{ctx.alpha}", measured, float(va.mean() - vb.mean()), p_opp)


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
    """metric(a) ≤ metric(b): not contradicted by a significant a > b."""
    return _order(ctx, c["a"], c["b"], a_greater=False, strict=False)


@comparison("at_least", strict=False)
def _at_least(ctx: Context, c: dict[str, Any]) -> TestResult:
    """metric(a) ≥ metric(b): not contradicted by a significant a < b."""
    return _order(ctx, c["a"], c["b"], a_greater=True, strict=False)


@comparison("best", strict=True)
def _best(ctx: Context, c: dict[str, Any]) -> TestResult:
    """metric(a) better than every selector of `others` (intersection-union: all tests at α)."""
    better_high = higher_is_better(ctx.metric)
    results = [_order(ctx, c["a"], other, a_greater=better_high, strict=True)
               for other in c["others"]]
    worst = max(r.p_value or 0.0 for r in results)
    return TestResult(all(r.supported for r in results),
                      f"{len(results)} one-sided t-tests (intersection-union, each at α = "
                      f"{ctx.alpha})", "; ".join(r.measured for r in results),
                      min(r.estimate for r in results), worst)


@comparison("ordering", strict=True)
def _ordering(ctx: Context, c: dict[str, Any]) -> TestResult:
    """metric increases along `chain` (each consecutive pair tested; intersection-union)."""
    chain = c["chain"]
    strict = c.get("strict", True)
    results = [_order(ctx, x, y, a_greater=False, strict=strict)
               for x, y in zip(chain, chain[1:], strict=False)]
    means = [ctx.values(x).mean() for x in chain]
    measured = " < ".join(f"{describe(x)} {_fmt(m)}" for x, m in zip(chain, means, strict=True))
    p = max(r.p_value or 0.0 for r in results) if strict else \
        min(r.p_value if r.p_value is not None else 1.0 for r in results)
    return TestResult(all(r.supported for r in results),
                      f"{len(results)} consecutive {results[0].test.split(',')[0]} "
                      f"(intersection-union)", measured, float(means[-1] - means[0]), p)


def _trend(ctx: Context, c: dict[str, Any], increasing: bool) -> TestResult:
    over = c["over"]
    values = ctx.values(c["select"], by=column_of(ctx.summary, over))
    x = values.index.get_level_values(0).to_numpy(float)
    y = values.to_numpy(float)
    xs = np.log(x) if c.get("log") else x
    slope, t, p = ols_slope(xs, y, increasing)
    means = values.groupby(level=0).mean()
    measured = ", ".join(f"{over}={k:g}: {_fmt(v)}" for k, v in means.items())
    axis = f"log {over}" if c.get("log") else over
    word = "> 0" if increasing else "< 0"
    return TestResult(p < ctx.alpha, f"OLS slope t-test on {axis} (n = {len(y)}), H1: slope "
                      f"{word}, α = {ctx.alpha}", f"{describe(c['select'])}: {measured}",
                      slope, p)


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
    bound = float(np.quantile(reps, 1 - ctx.alpha if at_most else ctx.alpha))
    ok = bound < threshold if at_most else bound > threshold
    side = "upper" if at_most else "lower"
    sign = "<" if at_most else ">"
    kind = "paired" if paired else "unpaired"
    return TestResult(
        ok,
        f"{kind} bootstrap ({N_BOOT} resamples) one-sided {100 * (1 - ctx.alpha):g} % {side} "
        f"bound of the ratio of means {sign} {threshold:g}",
        f"{describe(c['a'])} / {describe(c['b'])} = {ratio:.3f} ({side} bound {bound:.3f}; "
        f"{_fmt(va.mean())} / {_fmt(vb.mean())})",
        ratio, None, (bound, bound))


@comparison("ratio_at_most", strict=True)
def _ratio_at_most(ctx: Context, c: dict[str, Any]) -> TestResult:
    """mean(a)/mean(b) < threshold, established by the bootstrap upper bound."""
    return _ratio(ctx, c, at_most=True)


@comparison("ratio_at_least", strict=True)
def _ratio_at_least(ctx: Context, c: dict[str, Any]) -> TestResult:
    """mean(a)/mean(b) > threshold, established by the bootstrap lower bound."""
    return _ratio(ctx, c, at_most=False)


@comparison("ratio_between", strict=False)
def _ratio_between(ctx: Context, c: dict[str, Any]) -> TestResult:
    """mean(a)/mean(b) in [low, high]: not contradicted when the two-sided bootstrap CI meets it."""
    va, vb = ctx.values(c["a"]), ctx.values(c["b"])
    ratio, reps, paired = bootstrap_ratio(va, vb, ctx.seed)
    lo, hi = np.quantile(reps, [ctx.alpha / 2, 1 - ctx.alpha / 2])
    low, high = float(c["low"]), float(c["high"])
    ok = hi >= low and lo <= high
    return TestResult(
        bool(ok),
        f"{'paired' if paired else 'unpaired'} bootstrap {100 * (1 - ctx.alpha):g} % CI of the "
        f"ratio of means meets [{low:g}, {high:g}]",
        f"{describe(c['a'])} / {describe(c['b'])} = {ratio:.3f} "
        f"(CI {lo:.3f}–{hi:.3f})", ratio, None, (float(lo), float(hi)))


@comparison("difference_between", strict=False)
def _difference_between(ctx: Context, c: dict[str, Any]) -> TestResult:
    """mean(a) − mean(b) in [low, high]: not contradicted when the two-sided t interval of the
    difference (paired over shared trials, else Welch) meets the range."""
    va, vb = ctx.values(c["a"]), ctx.values(c["b"])
    common = va.index.intersection(vb.index)
    if len(common) >= 2 and len(common) == len(va) == len(vb):
        diff = (va.loc[common] - vb.loc[common]).to_numpy(float)
        est, se, df = stats.paired_difference(diff)
        name = f"paired t interval (n = {len(diff)} pairs)"
    else:
        x, y = va.to_numpy(float), vb.to_numpy(float)
        if len(x) < 2 or len(y) < 2:
            raise NotComparable("a t interval needs at least 2 trials per group")
        est, se, df = stats.welch_difference(x, y)
        name = f"Welch t interval (n = {len(x)}, {len(y)})"
    half = stats.t_margin(se, df, ctx.alpha)
    low, high = float(c["low"]), float(c["high"])
    return TestResult(
        est + half >= low and est - half <= high,
        f"two-sided {100 * (1 - ctx.alpha):g} % {name} of the difference meets "
        f"[{low:g}, {high:g}]",
        f"{describe(c['a'])} − {describe(c['b'])} = {_fmt(est)} (CI {_fmt(est - half)}–"
        f"{_fmt(est + half)})", est, None, (est - half, est + half))


@comparison("more_variable", strict=True)
def _more_variable(ctx: Context, c: dict[str, Any]) -> TestResult:
    """sd of a's trials > sd of b's trials: one-sided F-test of the variance ratio."""
    x, y = ctx.values(c["a"]).to_numpy(float), ctx.values(c["b"]).to_numpy(float)
    if len(x) < 2 or len(y) < 2:
        raise NotComparable("an F-test needs at least 2 trials per group")
    vx, vy, p = stats.variance_ratio_test(x, y)
    return TestResult(
        p < ctx.alpha, f"one-sided F-test of the variance ratio (n = {len(x)}, {len(y)}), "
        f"α = {ctx.alpha}",
        f"sd {describe(c['a'])} = {_fmt(math.sqrt(vx))}, sd {describe(c['b'])} = "
        f"{_fmt(math.sqrt(vy))}", math.sqrt(vx / vy) if vy > 0 else math.inf, p)


@comparison("between", strict=False)
def _between(ctx: Context, c: dict[str, Any]) -> TestResult:
    """mean metric of `select` in [low, high]: not contradicted when its t CI meets the range."""
    values = ctx.values(c["select"]).to_numpy(float)
    n = len(values)
    if n < 2:
        raise NotComparable("a t interval needs at least 2 trials")
    mean = float(values.mean())
    half = stats.t_half_width(values, ctx.alpha)
    low, high = float(c["low"]), float(c["high"])
    ok = mean + half >= low and mean - half <= high
    return TestResult(
        ok, f"two-sided {100 * (1 - ctx.alpha):g} % t interval meets [{low:g}, {high:g}]",
        f"{describe(c['select'])}: {_fmt(mean)} (CI {_fmt(mean - half)}–{_fmt(mean + half)}, "
        f"n = {n})", mean, None, (mean - half, mean + half))


@comparison("stable", strict=True)
def _stable(ctx: Context, c: dict[str, Any]) -> TestResult:
    """Relative range (max − min)/min of the group means over `over` < threshold, established by
    the bootstrap upper bound (trials resampled within each group)."""
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
    threshold = float(c["threshold"])
    keys = [k for k, _ in values.groupby(level=0)]
    measured = ", ".join(f"{over}={_value(k)}: {_fmt(m)}"
                         for k, m in zip(keys, means, strict=True))
    what = "range (max − min)" if absolute else "relative range"
    return TestResult(
        bound < threshold,
        f"bootstrap ({N_BOOT} resamples) one-sided {100 * (1 - ctx.alpha):g} % upper bound of "
        f"the {what} < {threshold:g}",
        f"{describe(c['select'])}: {measured}; {what} {rel:.3g} (upper bound "
        f"{bound:.3g})", rel, None, (bound, bound))


def run_comparison(ctx: Context, comp: dict[str, Any]) -> TestResult:
    """Run one comparison; with `for_each: column` run it per value of the column (all must hold:
    intersection-union)."""
    kind = comp["kind"]
    fn = COMPARISONS[kind]
    column = comp.get("for_each")
    if not column:
        return fn(ctx, comp)
    col = column_of(ctx.summary, column)
    values = comp.get("values") or _values_of(ctx.summary, comp, col)
    if not values:
        raise NotComparable(f"no results have a value of {column} for this comparison")
    results = []
    for value in values:
        sub = {k: v for k, v in comp.items() if k not in ("for_each", "values")}
        sub = _with_key(sub, column, value)
        results.append((value, fn(ctx, sub)))
    strict = STRICT[kind]
    ps = [r.p_value for _, r in results if r.p_value is not None]
    p = (max(ps) if strict else min(ps)) if ps else None
    return TestResult(
        all(r.supported for _, r in results),
        f"{results[0][1].test}; for each {column} (all must hold)",
        " | ".join(f"{column}={_value(v)}: {r.measured}" for v, r in results),
        min(r.estimate for _, r in results), p)


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
    """Verdict of one claim: reproduced / differs (with the reason) / not comparable (results at
    another scale, or unable to answer) / not run (no results)."""
    covers = claim.get("covers") or []
    base = dict(id=claim["id"], paper=claim["paper"], text=claim["text"],
                source=claim.get("source", ""), experiment=claim["experiment"],
                covers=covers if isinstance(covers, list) else [covers])
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
    if result.supported:
        return ClaimResult(**base, **common, status="reproduced", reason=_support_text(result))
    return ClaimResult(**base, **common, status="differs",
                       reason=_failure_text(result, STRICT[claim["comparison"]["kind"]]))


def _support_text(result: TestResult) -> str:
    if result.p_value is not None:
        return f"supported ({_pfmt(result.p_value)})"
    return "supported by the bootstrap bound"


def _failure_text(result: TestResult, strict: bool) -> str:
    if not strict:
        p = f" ({_pfmt(result.p_value)})" if result.p_value is not None else ""
        return f"contradicted at the stated level{p}"
    if result.p_value is not None:
        return f"not established: {_pfmt(result.p_value)}"
    return "not established: the bootstrap bound misses the threshold"
