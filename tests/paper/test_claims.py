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
    assert run_comparison(c, {"kind": "greater", "a": {"algorithm": "A"},
                              "b": {"algorithm": "B"}}).status == "differs"
    # no difference: a strict claim is inconclusive, with the trials that would decide it
    same = run_comparison(c, {"kind": "less", "a": {"algorithm": "A"}, "b": {"algorithm": "C"}})
    assert same.status == "inconclusive" and same.trials_needed > 10
    # a non-strict claim without a margin is at best "not contradicted (inconclusive)"
    loose = run_comparison(c, {"kind": "at_most", "a": {"algorithm": "A"},
                               "b": {"algorithm": "C"}})
    assert loose.status == "inconclusive" and "not contradicted" in loose.reason
    assert loose.trials_needed is None
    assert run_comparison(c, {"kind": "at_most", "a": {"algorithm": "B"},
                              "b": {"algorithm": "A"}}).status == "differs"


def test_non_inferiority_needs_its_margin(rng):
    low = 100 + rng.normal(0, 2, 10)
    df = frame({("A", None, 2.0): low, ("C", None, 2.0): low + rng.normal(0, 0.5, 10)})
    comp = {"kind": "at_most", "a": {"algorithm": "A"}, "b": {"algorithm": "C"}}
    assert run_comparison(ctx(df), {**comp, "margin": 2.0}).status == "reproduced"
    # a margin far below the spread of the difference: the precision gate holds it back
    assert run_comparison(ctx(df), {**comp, "margin": 0.2}).status == "inconclusive"


def test_ordering_strict_and_not(rng):
    base = rng.normal(0, 1, 12)
    df = frame({("e8", None, 2.0): 100 + base, ("e6", None, 2.0): 130 + base + rng.normal(0, 1, 12),
                ("e4", None, 2.0): 130 + base + rng.normal(0, 1, 12)})
    chain = [{"algorithm": "e8"}, {"algorithm": "e6"}, {"algorithm": "e4"}]
    strict = run_comparison(ctx(df), {"kind": "ordering", "chain": chain})
    loose = run_comparison(ctx(df), {"kind": "ordering", "chain": chain, "strict": False})
    assert strict.status == "inconclusive"  # e6 and e4 tie
    assert loose.status == "inconclusive" and "not contradicted" in loose.reason
    assert run_comparison(ctx(df), {**loose_comp(chain), "margin": 3.0}).supported
    backwards = run_comparison(ctx(df), loose_comp(chain[::-1]))
    assert backwards.status == "differs" and "2 of 2 adjacent pairs reversed" in backwards.reason


def loose_comp(chain: list[dict]) -> dict:
    return {"kind": "ordering", "chain": chain, "strict": False}


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
    assert run_comparison(ctx(df), {**near, "low": 1.0, "high": 1.5}).status == "differs"
    # an interval that reaches the band is no longer enough: it must lie inside
    edge = run_comparison(ctx(df), {**near, "low": 2.0, "high": 3.0})
    assert edge.status == "inconclusive" and "overlaps the edge" in edge.reason


def test_stable_relative_range(rng):
    flat = frame({("P", 4.0, s): 500 + rng.normal(0, 5, 10) for s in (2.0, 2.5, 3.0)})
    steep = frame({("P", 4.0, s): 500 * s + rng.normal(0, 5, 10) for s in (2.0, 2.5, 3.0)})
    comp = {"kind": "stable", "select": {"algorithm": "P"}, "over": "S", "threshold": 0.15}
    assert run_comparison(ctx(flat), comp).supported
    assert run_comparison(ctx(steep), comp).status == "differs"


def test_within_band_is_equivalence_per_cell(rng):
    base = rng.normal(96, 2, 12)
    flat = frame({(f"cell{i}", None, 2.0): base + rng.normal(0, 0.1, 12) for i in range(9)})
    comp = {"kind": "within_band", "select": {"algorithm": [f"cell{i}" for i in range(9)]},
            "over": "algorithm", "half_width": 0.4}
    assert run_comparison(ctx(flat), comp).status == "reproduced"
    # the same cells with one shifted by 2 points: that cell leaves the band
    shifted = frame({(f"cell{i}", None, 2.0): base + rng.normal(0, 0.1, 12) + 2 * (i == 0)
                     for i in range(9)})
    assert run_comparison(ctx(shifted), comp).status == "differs"
    # independent noise of s.e. 0.8 per cell, no true spread: undecided, not "unstable"
    noisy = frame({(f"cell{i}", None, 2.0): 96 + rng.normal(0, 2.8, 12) for i in range(9)})
    res = run_comparison(ctx(noisy), comp)
    assert res.status == "inconclusive" and res.trials_needed > 12


def test_between_uses_the_t_interval(rng):
    df = frame({("TS", 1.0, 2.0): 95 + rng.normal(0, 1, 12)})
    comp = {"kind": "between", "select": {"algorithm": "TS"}, "low": 93, "high": 99}
    assert run_comparison(ctx(df), comp).supported
    assert run_comparison(ctx(df), {**comp, "low": 50, "high": 60}).status == "differs"


def test_an_interval_covering_zero_does_not_reproduce_a_positive_gap(rng):
    df = frame({("TS", None, 2.0): 95 + rng.normal(0, 1, 12),
                ("UCB", None, 2.0): 95 + rng.normal(0, 1, 12)})
    comp = {"kind": "difference_between", "a": {"algorithm": "TS"},
            "b": {"algorithm": "UCB"}, "low": 0.5, "high": 1.5}
    res = run_comparison(ctx(df), comp)
    assert res.ci[0] < 0 < res.ci[1] and res.status != "reproduced"
    # a point value needs its stated margin: without one it cannot be reproduced
    point = {**comp, "low": 1.0, "high": 1.0}
    gap = frame({("TS", None, 2.0): 96 + rng.normal(0, 0.1, 12),
                 ("UCB", None, 2.0): 95 + rng.normal(0, 0.1, 12)})
    assert run_comparison(ctx(gap), point).status == "inconclusive"
    assert run_comparison(ctx(gap), {**point, "margin": 0.5}).status == "reproduced"


def test_for_each_takes_values_from_the_selected_rows(rng):
    df = frame({("A", None, 2.0): 10 + rng.normal(0, 1, 6),
                ("B", None, 2.0): 50 + rng.normal(0, 1, 6),
                ("A", None, 3.0): 10 + rng.normal(0, 1, 6),
                ("B", None, 3.0): 5 + rng.normal(0, 1, 6),
                ("Z", None, 9.0): [1, 2, 3, 4, 5, 6]})
    comp = {"kind": "less", "a": {"algorithm": "A"}, "b": {"algorithm": "B"}, "for_each": "S"}
    res = run_comparison(ctx(df), comp)
    assert res.status == "differs"  # holds at S = 2, reversed at S = 3
    assert "S = 2" in res.measured and "S = 3" in res.measured and "S = 9" not in res.measured
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
    assert out.status == "differs" and "opposite direction is significant" in out.reason
    inconsistent = evaluate_claim(claim(inconsistent="2 + 2 = 5"), results(df))
    assert inconsistent.status == "paper inconsistent" and "2 + 2 = 5" in inconsistent.reason
    uncounted = evaluate_claim(claim(counted=False, not_counted="arithmetic"), results(df))
    assert not uncounted.counted and uncounted.status == "reproduced"
    smoke = evaluate_claim(claim(horizon=5000), results(df))
    assert smoke.status == "not comparable" and "smoke scale" in smoke.reason and smoke.measured
    assert evaluate_claim(claim(), results(None)).status == "not run"
    missing = evaluate_claim(claim(experiment="other"), results(df))
    assert missing.status == "not run" and "not in the configuration" in missing.reason
    absent = claim(comparison={"kind": "less", "a": {"algorithm": "A"}, "b": {"algorithm": "X"}})
    assert "no results for X" in evaluate_claim(absent, results(df)).reason
    assert evaluate_claim(absent, results(df)).status == "not run"
