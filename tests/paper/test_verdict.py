"""The verdict rules: equivalence with a precision gate, one-sided tests, trials needed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from dpbandits.paper.verdict import (
    PRECISION_GATE,
    Decision,
    combine,
    equivalence,
    one_sided,
    plain,
    trials_for,
)


def test_no_reproduced_verdict_has_an_interval_wider_than_its_margin():
    rng = np.random.default_rng(42)
    reproduced = 0
    for _ in range(5000):
        n = int(rng.integers(2, 40))
        estimate, se = rng.normal(0, 1), abs(rng.normal(0, 0.5))
        low, high = sorted(rng.normal(0, 1.5, 2))
        decision = equivalence(estimate, se, n, low, high, 0.05, n - 1)
        q = special.stdtrit(n - 1, 0.95)
        if decision.status == "reproduced":
            reproduced += 1
            assert low <= estimate - q * se and estimate + q * se <= high
            assert se <= (high - low) / 2 / PRECISION_GATE
        if estimate + q * se < low or estimate - q * se > high:
            assert decision.status == "differs"
    assert reproduced > 100  # the property was exercised


def test_the_precision_gate_and_the_edges():
    assert equivalence(0.0, 0.1, 10, -1, 1, 0.05, 9).status == "reproduced"
    gated = equivalence(0.0, 0.4, 10, -1, 1, 0.05, 9)  # interval inside, s.e. > 1/3
    assert gated.status == "inconclusive" and "precision gate" in gated.reason
    assert gated.trials_needed == math.ceil((3 * 0.4 * math.sqrt(10) / 1) ** 2)
    assert equivalence(0.9, 0.1, 10, -1, 1, 0.05, 9).status == "inconclusive"
    assert equivalence(1.5, 0.1, 10, -1, 1, 0.05, 9).status == "differs"
    point = equivalence(1.0, 0.1, 10, 1.0, 1.0, 0.05, 9)
    assert point.status == "inconclusive" and "no equivalence margin" in point.reason
    assert equivalence(3.0, 0.0, 10, 3.0, 3.0, 0.05).status == "reproduced"
    assert equivalence(4.0, 0.0, 10, 3.0, 3.0, 0.05).status == "differs"


def test_one_sided_claims_end_inconclusive_when_neither_direction_is_significant():
    assert one_sided(1.0, 0.2, 10, 0.001, 0.999, 0.05).status == "reproduced"
    assert one_sided(-1.0, 0.2, 10, 0.999, 0.001, 0.05).status == "differs"
    open_ = one_sided(0.1, 0.2, 10, 0.3, 0.7, 0.05)
    assert open_.status == "inconclusive"
    assert open_.trials_needed == trials_for(0.2 * math.sqrt(10), 0.1, 0.05)


def test_trials_for_detects_the_effect_with_the_stated_power():
    # n = ((1.645 + 0.842) · 2 / 1)² = 24.7
    assert trials_for(2.0, 1.0, 0.05) == 25
    assert trials_for(2.0, 0.0, 0.05) is None
    # at that n the one-sided z-test rejects with probability ≈ 0.8
    rng = np.random.default_rng(1)
    means = rng.normal(1.0, 2.0 / math.sqrt(25), 20000)
    assert np.mean(means / (2.0 / math.sqrt(25)) > 1.6449) == pytest.approx(0.8, abs=0.02)


def test_combine_is_intersection_union():
    ok, open_, bad = Decision("reproduced", ""), Decision("inconclusive", "", 30), \
        Decision("differs", "")
    assert combine([ok, ok]) == ("reproduced", None)
    assert combine([ok, open_, Decision("inconclusive", "", 50)]) == ("inconclusive", 50)
    assert combine([ok, open_, Decision("inconclusive", "", None)]) == ("inconclusive", None)
    assert combine([open_, bad]) == ("differs", None)


def test_plain_notation():
    assert plain(12345.678) == "12346"
    assert plain(0.0045) == "0.0045"
    assert plain(1.0e-5) == "0.00001"
    assert plain(2070.4) == "2070"
    assert plain(float("nan")) == "—"
