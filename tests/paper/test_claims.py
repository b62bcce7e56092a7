"""Claims checked with stated tests: semantics, calibration, verdicts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpbandits.paper.claims import Context, evaluate_claim, one_sided_t, run_comparison
from dpbandits.paper.published import ALPHA, validate_claim
from dpbandits.paper.results import Results

from paper_helpers import frame

RNG_SEED = 20251129


def ctx(summary: pd.DataFrame, metric: str = "regret", alpha: float = ALPHA) -> Context:
    return Context(summary, metric, alpha, "auto", 7)


@pytest.fixture(scope="module")
def rng() -> np.random.Generator:
    return np.random.default_rng(RNG_SEED)


def test_paired_test_used_for_common_trials_and_matches_scipy(rng):
    a = pd.Series(rng.normal(10, 1, 12), index=range(12))
    b = a - 0.5 + pd.Series(rng.normal(0, 0.3, 12), index=range(12))
    stat, p, name = one_sided_t(a, b, greater=True)
    assert "paired" in name
    assert p == pytest.approx(stats.ttest_rel(a, b, alternative="greater").pvalue)
    _, p_welch, name = one_sided_t(a, b.set_axis(range(100, 112)), greater=True)
    assert "Welch" in name
    assert p_welch == pytest.approx(
        stats.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue)


def test_paired_t_is_calibrated_under_the_null(rng):
    """Rejection rate of the one-sided paired test at α = 0.05 under H0: 0.05 ± 4.5 s.e."""
    reps, rejections = 400, 0
    for _ in range(reps):
        a = pd.Series(rng.normal(0, 1, 10))
        b = pd.Series(rng.normal(0, 1, 10))
        rejections += one_sided_t(a, b, greater=False)[1] < 0.05
    se = np.sqrt(0.05 * 0.95 / reps)
    assert abs(rejections / reps - 0.05) < 4.5 * se


def test_less_and_greater_are_strict(rng):
    low = 100 + rng.normal(0, 2, 10)
    df = frame({("A", None, 2.0): low, ("B", None, 2.0): low + 20 + rng.normal(0, 2, 10),
                ("C", None, 2.0): low + rng.normal(0, 2, 10)})
    c = ctx(df)
    assert run_comparison(c, {"kind": "less", "a": {"algorithm": "A"},
                              "b": {"algorithm": "B"}}).supported
    assert not run_comparison(c, {"kind": "greater", "a": {"algorithm": "A"},
                                  "b": {"algorithm": "B"}}).supported
    # no difference: a strict claim is not established, a non-strict one is not contradicted
    assert not run_comparison(c, {"kind": "less", "a": {"algorithm": "A"},
                                  "b": {"algorithm": "C"}}).supported
    assert run_comparison(c, {"kind": "at_most", "a": {"algorithm": "A"},
                              "b": {"algorithm": "C"}}).supported
    assert not run_comparison(c, {"kind": "at_most", "a": {"algorithm": "B"},
                                  "b": {"algorithm": "A"}}).supported


def test_ordering_strict_and_not(rng):
    base = rng.normal(0, 1, 12)
    df = frame({("e8", None, 2.0): 100 + base, ("e6", None, 2.0): 130 + base + rng.normal(0, 1, 12),
                ("e4", None, 2.0): 130 + base + rng.normal(0, 1, 12)})
    chain = [{"algorithm": "e8"}, {"algorithm": "e6"}, {"algorithm": "e4"}]
    strict = run_comparison(ctx(df), {"kind": "ordering", "chain": chain})
    loose = run_comparison(ctx(df), {"kind": "ordering", "chain": chain, "strict": False})
    assert not strict.supported  # e6 and e4 tie
    assert loose.supported
    assert not run_comparison(ctx(df), {"kind": "ordering", "chain": chain[::-1],
                                        "strict": False}).supported


def test_trend_slope_over_a_grid(rng):
    df = frame({("G", None, s): 100 * s + rng.normal(0, 5, 8) for s in (2.0, 2.5, 3.0)})
    up = {"kind": "increasing", "select": {"algorithm": "G"}, "over": "S"}
    res = run_comparison(ctx(df), up)
    assert res.supported and res.estimate == pytest.approx(100, rel=0.1)
    assert not run_comparison(ctx(df), {**up, "kind": "decreasing"}).supported


def test_ratio_bounds_by_bootstrap(rng):
    df = frame({("G", None, 2.0): 100 + rng.normal(0, 3, 10),
                ("G", None, 3.0): 300 + rng.normal(0, 3, 10)})
    comp = {"kind": "ratio_at_least", "a": {"algorithm": "G", "S": 3.0},
            "b": {"algorithm": "G", "S": 2.0}, "threshold": 1.5}
    res = run_comparison(ctx(df), comp)
    assert res.supported and res.estimate == pytest.approx(3.0, rel=0.05)
    assert "unpaired" in res.test  # different instances: no pairing
    assert not run_comparison(ctx(df), {**comp, "threshold": 3.5}).supported
    assert run_comparison(ctx(df), {**comp, "kind": "ratio_at_most", "threshold": 3.5}).supported
    near = {**comp, "kind": "ratio_between", "low": 2.9, "high": 3.1}
    assert run_comparison(ctx(df), near).supported
    assert not run_comparison(ctx(df), {**near, "low": 1.0, "high": 1.5}).supported


def test_stable_relative_range(rng):
    flat = frame({("P", 4.0, s): 500 + rng.normal(0, 5, 10) for s in (2.0, 2.5, 3.0)})
    steep = frame({("P", 4.0, s): 500 * s + rng.normal(0, 5, 10) for s in (2.0, 2.5, 3.0)})
    comp = {"kind": "stable", "select": {"algorithm": "P"}, "over": "S", "threshold": 0.15}
    assert run_comparison(ctx(flat), comp).supported
    assert not run_comparison(ctx(steep), comp).supported


def test_between_uses_the_t_interval(rng):
    df = frame({("TS", 1.0, 2.0): 95 + rng.normal(0, 1, 12)})
    comp = {"kind": "between", "select": {"algorithm": "TS"}, "low": 93, "high": 99}
    assert run_comparison(ctx(df), comp).supported
    assert not run_comparison(ctx(df), {**comp, "low": 50, "high": 60}).supported


def test_for_each_takes_values_from_the_selected_rows(rng):
    df = frame({("A", None, 2.0): 10 + rng.normal(0, 1, 6),
                ("B", None, 2.0): 50 + rng.normal(0, 1, 6),
                ("A", None, 3.0): 10 + rng.normal(0, 1, 6),
                ("B", None, 3.0): 5 + rng.normal(0, 1, 6),
                ("Z", None, 9.0): [1, 2, 3, 4, 5, 6]})
    comp = {"kind": "less", "a": {"algorithm": "A"}, "b": {"algorithm": "B"}, "for_each": "S"}
    res = run_comparison(ctx(df), comp)
    assert not res.supported  # holds at S = 2, fails at S = 3
    assert "S=2" in res.measured and "S=3" in res.measured and "S=9" not in res.measured
    assert run_comparison(ctx(df), {**comp, "values": [2.0]}).supported


def claim(**overrides) -> dict:
    base = {"id": "c1", "paper": "glm", "text": "A below B", "experiment": "unit",
            "horizon": 1000, "comparison": {"kind": "less", "a": {"algorithm": "A"},
                                            "b": {"algorithm": "B"}}}
    return validate_claim({**base, **overrides}, 0)


def results(summary: pd.DataFrame | None) -> Results:
    return Results({"unit": {"paper": "glm"}}, {"unit": summary})


def test_evaluate_claim_statuses(rng):
    df = frame({("A", None, 2.0): 10 + rng.normal(0, 1, 8),
                ("B", None, 2.0): 20 + rng.normal(0, 1, 8)})
    assert evaluate_claim(claim(), results(df)).status == "reproduced"
    flipped = claim(comparison={"kind": "less", "a": {"algorithm": "B"}, "b": {"algorithm": "A"}})
    out = evaluate_claim(flipped, results(df))
    assert out.status == "differs" and "not established" in out.reason
    smoke = evaluate_claim(claim(horizon=5000), results(df))
    assert smoke.status == "not comparable" and "smoke scale" in smoke.reason and smoke.measured
    assert evaluate_claim(claim(), results(None)).status == "not run"
    missing = evaluate_claim(claim(experiment="other"), results(df))
    assert missing.status == "not run" and "not in the configuration" in missing.reason
    absent = claim(comparison={"kind": "less", "a": {"algorithm": "A"}, "b": {"algorithm": "X"}})
    assert "no results for X" in evaluate_claim(absent, results(df)).reason
    assert evaluate_claim(absent, results(df)).status == "not run"
