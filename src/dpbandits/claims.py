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

Selectors (`a`, `b`, `select`, `chain`, `others`) filter summary rows by column value (a list
means any of; `null` matches a missing ε; `max`/`min` pick the extreme value among the rows the
other keys select; `pick: best|worst` keeps the best/worst of several algorithm labels, e.g. a
grid search). Strict claims ("A < B", "grows", ...) are reproduced when the test establishes them
at level α; non-strict claims ("A ≤ B", "within [lo, hi]") are reproduced unless the test
contradicts them at level α.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml
from scipy import stats

from dpbandits.errors import ConfigError
from dpbandits.seeding import stable_key

ALPHA = 0.05
N_BOOT = 4000
HIGHER_IS_BETTER = {"reward", "mean_reward", "ctr", "np_percent", "np_percent_norm"}
NP_METRICS = {"np_percent": "np", "np_percent_norm": "np_norm"}
STATUSES = ("reproduced", "differs", "not run")


class NotComparable(Exception):
    """The results cannot answer the claim (missing rows, too few trials, ...)."""


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
        out = asdict(self)
        out["estimate"] = None if not np.isfinite(self.estimate) else float(self.estimate)
        return out


# ---------------------------------------------------------------------------------------------
# Selection and per-trial metrics


def _column(summary: pd.DataFrame, key: str) -> str:
    if key in summary.columns:
        return key
    if f"param_{key}" in summary.columns:
        return f"param_{key}"
    raise NotComparable(f"column {key!r} is not in the results")


def _match(series: pd.Series, want: Any) -> pd.Series:
    wants = want if isinstance(want, list) else [want]
    mask = pd.Series(False, index=series.index)
    for value in wants:
        if value is None or value == "none":
            mask |= series.isna()
        elif isinstance(value, bool) or not isinstance(value, int | float):
            mask |= series.astype(str) == str(value)
        else:
            numeric = pd.to_numeric(series, errors="coerce")
            mask |= np.isclose(numeric.astype(float), float(value), rtol=1e-9, atol=1e-12) \
                & numeric.notna()
    return mask


def select(summary: pd.DataFrame, where: dict[str, Any]) -> pd.DataFrame:
    """Rows matching every key of `where` (`max`/`min` values resolved after the other keys)."""
    rows = summary
    extremes = {}
    for key, want in where.items():
        if key == "pick":
            continue
        if want in ("max", "min"):
            extremes[key] = want
            continue
        rows = rows[_match(rows[_column(rows, key)], want)]
    for key, which in extremes.items():
        col = _column(rows, key)
        values = pd.to_numeric(rows[col], errors="coerce").dropna()
        if values.empty:
            return rows.iloc[0:0]
        target = values.max() if which == "max" else values.min()
        rows = rows[_match(rows[col], float(target))]
    return rows


def _describe(where: dict[str, Any]) -> str:
    parts = []
    for key, value in where.items():
        if key in ("algorithm", "policy") and not isinstance(value, list):
            parts.insert(0, str(value))
        elif key == "epsilon":
            parts.append(f"ε={value if value is not None else 'none'}")
        else:
            parts.append(f"{key}={value}")
    return " ".join(parts) if parts else "all rows"


def higher_is_better(metric: str) -> bool:
    return metric in HIGHER_IS_BETTER


def with_metric(summary: pd.DataFrame, metric: str, exp: dict[str, Any] | None = None,
                reference: str | None = None) -> pd.DataFrame:
    """The summary with the columns a metric needs: `np_percent`/`np_percent_norm` are NP% and
    normalised NP% against the `reference` label on the same trial, as the AdaPrivate-TS outputs
    define them (ts spec §1.3; dpbandits.outputs.ts.trial_metrics)."""
    if metric not in NP_METRICS:
        return summary
    if reference is None or exp is None:
        raise NotComparable(f"metric {metric} needs a `reference` algorithm label")
    from dpbandits.outputs.ts import trial_metrics

    try:
        return trial_metrics(exp, summary, reference)
    except ConfigError as exc:
        raise NotComparable(str(exc)) from None


def metric_values(rows: pd.DataFrame, metric: str) -> pd.Series:
    """Per-row metric: a summary column, `ctr` (= mean_reward) or NP% (see with_metric)."""
    column = {"ctr": "mean_reward", **NP_METRICS}.get(metric, metric)
    if column not in rows.columns:
        raise NotComparable(f"metric {metric!r} is not in the results")
    return pd.to_numeric(rows[column], errors="coerce")


def trial_values(
    summary: pd.DataFrame,
    where: dict[str, Any],
    metric: str,
    by: str | None = None,
) -> pd.Series:
    """Metric per trial, indexed by (instance_index, seed) (and `by` first when given); the
    summary must carry the metric's columns (with_metric)."""
    rows = select(summary, where)
    if rows.empty:
        raise NotComparable(f"no results for {_describe(where)}")
    labels = rows["algorithm"].unique()
    if len(labels) > 1 and where.get("pick") in ("best", "worst"):
        means = metric_values(rows, metric).groupby(rows["algorithm"]).mean()
        best = higher_is_better(metric) == (where["pick"] == "best")
        rows = rows[rows["algorithm"] == (means.idxmax() if best else means.idxmin())]
    values = metric_values(rows, metric)
    keys = ([by] if by else []) + ["instance_index", "seed"]
    frame = rows[keys].assign(value=values.to_numpy(float)).dropna(subset=["value"])
    if frame.duplicated(keys).any():
        raise NotComparable(
            f"{_describe(where)} selects several rows per trial "
            f"({', '.join(map(str, labels[:3]))}...; ε values "
            f"{sorted(rows['epsilon'].dropna().unique().tolist())}); narrow the selector"
        )
    return frame.set_index(keys)["value"]


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
    se = values.std(ddof=1) / math.sqrt(n) if n > 1 else math.nan
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
        res = stats.ttest_rel(x, y, alternative=alternative)
        return float(res.statistic), float(res.pvalue), name
    x, y = a.to_numpy(float), b.to_numpy(float)
    if len(x) < 2 or len(y) < 2:
        raise NotComparable("Welch's t-test needs at least 2 trials per group")
    name = f"Welch t-test (n = {len(x)}, {len(y)})"
    if x.std() == 0 and y.std() == 0:
        d = x.mean() - y.mean()
        return d, (0.0 if (d > 0) == greater and d != 0 else 1.0), name
    res = stats.ttest_ind(x, y, equal_var=False, alternative=alternative)
    return float(res.statistic), float(res.pvalue), name


def bootstrap_ratio(a: pd.Series, b: pd.Series, seed: int, n_boot: int = N_BOOT) \
        -> tuple[float, np.ndarray, bool]:
    """Ratio of means mean(a)/mean(b) and its bootstrap replicates (resampling pairs of trials
    when both ran the same trials, else each group on its own)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    common = a.index.intersection(b.index)
    paired = len(common) >= 2 and len(common) == len(a) == len(b)
    if paired:
        x, y = a.loc[common].to_numpy(float), b.loc[common].to_numpy(float)
        idx = rng.integers(0, len(x), size=(n_boot, len(x)))
        reps = x[idx].mean(axis=1) / y[idx].mean(axis=1)
    else:
        x, y = a.to_numpy(float), b.to_numpy(float)
        if len(x) < 2 or len(y) < 2:
            raise NotComparable("a bootstrap needs at least 2 trials per group")
        reps = (x[rng.integers(0, len(x), size=(n_boot, len(x)))].mean(axis=1)
                / y[rng.integers(0, len(y), size=(n_boot, len(y)))].mean(axis=1))
    return float(x.mean() / y.mean()), reps, paired


def ols_slope(x: np.ndarray, y: np.ndarray, increasing: bool) -> tuple[float, float, float]:
    """OLS slope of y on x, its t statistic and the one-sided p-value of H1: slope > 0 (< 0)."""
    if len(np.unique(x)) < 2 or len(x) < 3:
        raise NotComparable("a slope test needs ≥ 2 grid values and ≥ 3 trials")
    res = stats.linregress(x, y)
    if res.stderr == 0:
        good = (res.slope > 0) == increasing and res.slope != 0
        return float(res.slope), math.inf if good else -math.inf, 0.0 if good else 1.0
    t = res.slope / res.stderr
    df = len(x) - 2
    p = float(stats.t.sf(t, df) if increasing else stats.t.cdf(t, df))
    return float(res.slope), float(t), p


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
        return trial_values(self.summary, where, self.metric, by)


Comparison = Callable[[Context, dict[str, Any]], TestResult]
COMPARISONS: dict[str, Comparison] = {}
STRICT: dict[str, bool] = {}


def comparison(name: str, strict: bool) -> Callable[[Comparison], Comparison]:
    def wrap(fn: Comparison) -> Comparison:
        COMPARISONS[name] = fn
        STRICT[name] = strict
        return fn

    return wrap


def _order(ctx: Context, a: dict, b: dict, a_greater: bool, strict: bool) -> TestResult:
    va, vb = ctx.values(a), ctx.values(b)
    stat, p, name = one_sided_t(va, vb, a_greater, ctx.test)
    sign = ">" if a_greater else "<"
    measured = (f"{_describe(a)}: {_mean_se(va.to_numpy())}; "
                f"{_describe(b)}: {_mean_se(vb.to_numpy())}")
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
    measured = " < ".join(f"{_describe(x)} {_fmt(m)}" for x, m in zip(chain, means, strict=True))
    p = max(r.p_value or 0.0 for r in results) if strict else \
        min(r.p_value if r.p_value is not None else 1.0 for r in results)
    return TestResult(all(r.supported for r in results),
                      f"{len(results)} consecutive {results[0].test.split(',')[0]} "
                      f"(intersection-union)", measured, float(means[-1] - means[0]), p)


def _trend(ctx: Context, c: dict[str, Any], increasing: bool) -> TestResult:
    over = c["over"]
    values = ctx.values(c["select"], by=_column(ctx.summary, over))
    x = values.index.get_level_values(0).to_numpy(float)
    y = values.to_numpy(float)
    xs = np.log(x) if c.get("log") else x
    slope, t, p = ols_slope(xs, y, increasing)
    means = values.groupby(level=0).mean()
    measured = ", ".join(f"{over}={k:g}: {_fmt(v)}" for k, v in means.items())
    axis = f"log {over}" if c.get("log") else over
    word = "> 0" if increasing else "< 0"
    return TestResult(p < ctx.alpha, f"OLS slope t-test on {axis} (n = {len(y)}), H1: slope "
                      f"{word}, α = {ctx.alpha}", f"{_describe(c['select'])}: {measured}",
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
        f"{_describe(c['a'])} / {_describe(c['b'])} = {ratio:.3f} ({side} bound {bound:.3f}; "
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
        f"{_describe(c['a'])} / {_describe(c['b'])} = {ratio:.3f} "
        f"(CI {lo:.3f}–{hi:.3f})", ratio, None, (float(lo), float(hi)))


@comparison("difference_between", strict=False)
def _difference_between(ctx: Context, c: dict[str, Any]) -> TestResult:
    """mean(a) − mean(b) in [low, high]: not contradicted when the two-sided t interval of the
    difference (paired over shared trials, else Welch) meets the range."""
    va, vb = ctx.values(c["a"]), ctx.values(c["b"])
    common = va.index.intersection(vb.index)
    if len(common) >= 2 and len(common) == len(va) == len(vb):
        diff = (va.loc[common] - vb.loc[common]).to_numpy(float)
        n = len(diff)
        est, se, df = float(diff.mean()), float(diff.std(ddof=1) / math.sqrt(n)), n - 1
        name = f"paired t interval (n = {n} pairs)"
    else:
        x, y = va.to_numpy(float), vb.to_numpy(float)
        if len(x) < 2 or len(y) < 2:
            raise NotComparable("a t interval needs at least 2 trials per group")
        vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
        est, se = float(x.mean() - y.mean()), math.sqrt(vx + vy)
        df = (vx + vy) ** 2 / (vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1)) if se > 0 else 1
        name = f"Welch t interval (n = {len(x)}, {len(y)})"
    half = float(stats.t.ppf(1 - ctx.alpha / 2, df) * se)
    low, high = float(c["low"]), float(c["high"])
    return TestResult(
        est + half >= low and est - half <= high,
        f"two-sided {100 * (1 - ctx.alpha):g} % {name} of the difference meets "
        f"[{low:g}, {high:g}]",
        f"{_describe(c['a'])} − {_describe(c['b'])} = {_fmt(est)} (CI {_fmt(est - half)}–"
        f"{_fmt(est + half)})", est, None, (est - half, est + half))


@comparison("more_variable", strict=True)
def _more_variable(ctx: Context, c: dict[str, Any]) -> TestResult:
    """sd of a's trials > sd of b's trials: one-sided F-test of the variance ratio."""
    x, y = ctx.values(c["a"]).to_numpy(float), ctx.values(c["b"]).to_numpy(float)
    if len(x) < 2 or len(y) < 2:
        raise NotComparable("an F-test needs at least 2 trials per group")
    vx, vy = x.var(ddof=1), y.var(ddof=1)
    if vy == 0:
        p = 0.0 if vx > 0 else 1.0
    else:
        p = float(stats.f.sf(vx / vy, len(x) - 1, len(y) - 1))
    return TestResult(
        p < ctx.alpha, f"one-sided F-test of the variance ratio (n = {len(x)}, {len(y)}), "
        f"α = {ctx.alpha}",
        f"sd {_describe(c['a'])} = {_fmt(math.sqrt(vx))}, sd {_describe(c['b'])} = "
        f"{_fmt(math.sqrt(vy))}", math.sqrt(vx / vy) if vy > 0 else math.inf, p)


@comparison("between", strict=False)
def _between(ctx: Context, c: dict[str, Any]) -> TestResult:
    """mean metric of `select` in [low, high]: not contradicted when its t CI meets the range."""
    values = ctx.values(c["select"]).to_numpy(float)
    n = len(values)
    if n < 2:
        raise NotComparable("a t interval needs at least 2 trials")
    mean = float(values.mean())
    half = float(stats.t.ppf(1 - ctx.alpha / 2, n - 1) * values.std(ddof=1) / math.sqrt(n))
    low, high = float(c["low"]), float(c["high"])
    ok = mean + half >= low and mean - half <= high
    return TestResult(
        ok, f"two-sided {100 * (1 - ctx.alpha):g} % t interval meets [{low:g}, {high:g}]",
        f"{_describe(c['select'])}: {_fmt(mean)} (CI {_fmt(mean - half)}–{_fmt(mean + half)}, "
        f"n = {n})", mean, None, (mean - half, mean + half))


@comparison("stable", strict=True)
def _stable(ctx: Context, c: dict[str, Any]) -> TestResult:
    """Relative range (max − min)/min of the group means over `over` < threshold, established by
    the bootstrap upper bound (trials resampled within each group)."""
    over = c["over"]
    values = ctx.values(c["select"], by=_column(ctx.summary, over))
    groups = [g.to_numpy(float) for _, g in values.groupby(level=0)]
    if len(groups) < 2 or min(len(g) for g in groups) < 2:
        raise NotComparable(f"stability over {over} needs ≥ 2 values with ≥ 2 trials each")
    rng = np.random.default_rng(np.random.SeedSequence(ctx.seed))
    means = np.array([g.mean() for g in groups])
    reps = np.stack([g[rng.integers(0, len(g), size=(N_BOOT, len(g)))].mean(axis=1)
                     for g in groups], axis=1)
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
        f"{_describe(c['select'])}: {measured}; {what} {rel:.3g} (upper bound "
        f"{bound:.3g})", rel, None, (bound, bound))


def run_comparison(ctx: Context, comp: dict[str, Any]) -> TestResult:
    """Run one comparison; with `for_each: column` run it per value of the column (all must hold:
    intersection-union)."""
    kind = comp["kind"]
    fn = COMPARISONS[kind]
    column = comp.get("for_each")
    if not column:
        return fn(ctx, comp)
    col = _column(ctx.summary, column)
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
# Claims file


REQUIRED = ("id", "paper", "text", "experiment", "horizon", "comparison")
SELECTOR_KEYS = {
    "less": ("a", "b"), "greater": ("a", "b"), "at_most": ("a", "b"), "at_least": ("a", "b"),
    "best": ("a", "others"), "ordering": ("chain",), "increasing": ("select", "over"),
    "decreasing": ("select", "over"), "ratio_at_most": ("a", "b", "threshold"),
    "ratio_at_least": ("a", "b", "threshold"), "ratio_between": ("a", "b", "low", "high"),
    "between": ("select", "low", "high"), "stable": ("select", "over", "threshold"),
    "difference_between": ("a", "b", "low", "high"), "more_variable": ("a", "b"),
}
TESTS = ("auto", "paired_t", "welch_t")


def validate_claim(claim: Any, index: int) -> dict[str, Any]:
    """One claim entry, checked: ConfigError naming the bad key and what is allowed."""
    where = f"paper/claims.yaml claims[{index}]"
    if not isinstance(claim, dict):
        raise ConfigError(f"{where} must be a mapping with keys {', '.join(REQUIRED)}")
    for key in REQUIRED:
        if key not in claim:
            raise ConfigError(f"{where} ({claim.get('id', '?')}) lacks {key!r}; required: "
                              f"{', '.join(REQUIRED)}")
    comp = claim["comparison"]
    kind = comp.get("kind") if isinstance(comp, dict) else None
    if kind not in SELECTOR_KEYS:
        raise ConfigError(f"{where} ({claim['id']}) comparison kind {kind!r} is not allowed; "
                          f"allowed: {', '.join(SELECTOR_KEYS)}")
    for key in SELECTOR_KEYS[kind]:
        if key not in comp:
            raise ConfigError(f"{where} ({claim['id']}) comparison {kind} lacks {key!r}")
    test = claim.get("test", "auto")
    if test not in TESTS:
        raise ConfigError(f"{where} ({claim['id']}) test {test!r} is not allowed; allowed: "
                          f"{', '.join(TESTS)}")
    alpha = claim.get("alpha", ALPHA)
    if not isinstance(alpha, int | float) or not 0 < alpha < 0.5:
        raise ConfigError(f"{where} ({claim['id']}) alpha {alpha!r} is not allowed; allowed: "
                          "0 < alpha < 0.5")
    return claim


def load_claims_file(path: str | Path) -> dict[str, Any]:
    """paper/claims.yaml: `claims` (list) and `agreement` rules, validated."""
    with open(path) as handle:
        data = yaml.safe_load(handle) or {}
    claims = [validate_claim(c, i) for i, c in enumerate(data.get("claims", []))]
    ids = [c["id"] for c in claims]
    duplicate = {i for i in ids if ids.count(i) > 1}
    if duplicate:
        raise ConfigError(f"paper/claims.yaml claim ids must be unique; repeated: "
                          f"{', '.join(sorted(duplicate))}")
    return {**data, "claims": claims}


class Results:
    """Summaries of the configured experiments, with the metric columns added on demand (cached:
    NP% may rebuild environments)."""

    def __init__(self, experiments: dict[str, dict[str, Any]],
                 summaries: dict[str, pd.DataFrame | None]) -> None:
        self.experiments = experiments
        self.summaries = summaries
        self._frames: dict[tuple[str, str, str | None], pd.DataFrame] = {}

    def frame(self, name: str, metric: str, reference: str | None = None) -> pd.DataFrame:
        """The summary of `name` carrying `metric` (raises NotComparable when it cannot)."""
        summary = self.summaries.get(name)
        if summary is None:
            raise NotComparable(f"no results yet (results/{name}/summary.csv)")
        kind = metric if metric in NP_METRICS else "plain"
        key = (name, kind, reference if kind != "plain" else None)
        if key not in self._frames:
            self._frames[key] = with_metric(summary, metric, self.experiments.get(name),
                                            reference)
        return self._frames[key]


def evaluate_claim(claim: dict[str, Any], results: Results) -> ClaimResult:
    """Verdict of one claim: reproduced / differs (with the reason) / not run."""
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
    try:
        summary = results.frame(name, metric, claim.get("reference"))
        ctx = Context(summary, metric, float(claim.get("alpha", ALPHA)),
                      claim.get("test", "auto"), stable_key("claim", claim["id"]))
        result = run_comparison(ctx, claim["comparison"])
    except NotComparable as exc:
        reason = f"{scale}; {exc}" if scale else f"not comparable: {exc}"
        return ClaimResult(**base, status="not run", reason=reason)
    common = dict(test=result.test, measured=result.measured, p_value=result.p_value,
                  estimate=result.estimate)
    if scale:
        return ClaimResult(**base, **common, status="not run", reason=scale)
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
