"""The privacy ledger: totals composed from the entries (sequential within a partition,
parallel across), the conversion the budget was set with, breaches and claims."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpbandits.errors import PrivacyBudgetError
from dpbandits.instances.registry import build_instance
from dpbandits.policies import make_policy
from dpbandits.privacy.ledger import EVERY_RECORD, PrivacyLedger, rho_to_epsilon
from dpbandits.privacy.zcdp import epsilon_from_rho_tight, rho_from_epsilon

DELTA = 1e-5


def test_partitions_compose_in_parallel_and_shared_entries_add_to_each() -> None:
    ledger = PrivacyLedger(3.0, DELTA)
    for batch in range(5):
        ledger.add("laplace", "sum", sensitivity=1.0, noise_scale=2.0, epsilon=0.5,
                   partition=f"batch {batch}")
    ledger.add("laplace", "extra", sensitivity=1.0, noise_scale=1.0, epsilon=1.0,
               partition="batch 3")
    assert ledger.spent() == (1.5, 0.0)  # batch 3 pays 0.5 + 1.0; the others 0.5
    ledger.add("laplace", "everyone", sensitivity=1.0, noise_scale=1.0, epsilon=1.0,
               partition=EVERY_RECORD, count=2)
    assert ledger.spent() == (3.5, 0.0)
    with pytest.raises(PrivacyBudgetError, match="overspent"):
        ledger.check()


def test_rho_adds_up_and_converts_at_the_remaining_delta() -> None:
    ledger = PrivacyLedger(10.0, 1e-3)
    ledger.add("gaussian", "a", sensitivity=1.0, noise_scale=1.0, rho=0.25, count=2)
    ledger.add("pure", "b", sensitivity=1.0, noise_scale=1.0, epsilon=0.1, delta=4e-4)
    eps, delta = ledger.spent()
    assert delta == 1e-3
    assert eps == pytest.approx(0.1 + rho_to_epsilon(0.5, 6e-4), rel=1e-12)
    assert ledger.rho_spent == 0.5


def test_tight_conversion_is_used_when_the_budget_was_set_with_it() -> None:
    """DGS-LinUCB with `conversion: tight` spends ρ_tight(ε, δ): within budget in its own
    conversion, an apparent overspend if re-converted with the classic formula."""
    inst = build_instance({"generator": "logistic_pool", "seed": 2, "horizon": 200})
    pol = make_policy("DGS-LinUCB", inst.info, np.random.default_rng(0), epsilon=1.0,
                      delta=DELTA, conversion="tight")
    pol.run(inst.environment(0))  # the runner checks the ledger: no false overspend
    assert pol.ledger.conversion == "tight"
    assert pol.ledger.spent()[0] == pytest.approx(1.0, rel=1e-6)
    rho = pol.ledger.rho_spent
    assert epsilon_from_rho_tight(rho, DELTA) <= 1.0 + 1e-6
    assert rho_to_epsilon(rho, DELTA) > 1.2  # the classic re-conversion overstates it


def test_breach_means_no_finite_epsilon_and_is_refused_in_strict() -> None:
    paper = PrivacyLedger(1.0, DELTA, accounting="paper")
    paper.add("laplace", "a", sensitivity=1.0, noise_scale=1.0, epsilon=0.5)
    paper.breach("the trigger is not private")
    paper.state_claim(1.0, DELTA, "as published")
    assert paper.spent() == (math.inf, DELTA)
    record = json.loads(paper.to_json())
    assert record["breaches"] == ["the trigger is not private"]
    assert record["claim"][0] == 1.0 and record["epsilon_spent"] == math.inf
    strict = PrivacyLedger(1.0, DELTA)
    with pytest.raises(PrivacyBudgetError):
        strict.breach("anything")
    with pytest.raises(PrivacyBudgetError):
        strict.state_claim(1.0, DELTA, "a declared total")


def test_empty_ledger_spends_nothing() -> None:
    ledger = PrivacyLedger(1.0, DELTA)
    assert ledger.spent() == (0.0, 0.0) and ledger.rho_spent == 0.0
    ledger.check()
    assert rho_from_epsilon(1.0, DELTA) > 0


def test_spent_converts_each_distinct_partition_cost_once_with_the_same_result() -> None:
    """`spent` converts partitions that pay the same once each; its (ε, δ) and ρ are those of
    converting every partition of `partition_costs` in order, on random ledgers that mix
    repeated and distinct partitions, pure and zCDP entries, and every-record entries."""
    rng = np.random.default_rng(3)
    repeats = differs = 0
    for case in range(200):
        conversion = "tight" if case % 10 == 0 else "classic"
        ledger = PrivacyLedger(10.0, 1e-5, conversion=conversion)
        for _ in range(int(rng.integers(1, 60))):
            kind = rng.random()
            partition = (EVERY_RECORD if kind < 0.1
                         else f"batch {int(rng.integers(0, 8))}")
            if rng.random() < 0.7:
                ledger.add("gaussian", "x", sensitivity=1.0, noise_scale=1.0,
                           rho=float(rng.choice([0.01, 0.02, rng.uniform(0, 0.05)])),
                           partition=partition, count=int(rng.integers(1, 3)))
            else:
                ledger.add("laplace", "x", sensitivity=1.0, noise_scale=1.0,
                           epsilon=float(rng.choice([0.1, rng.uniform(0, 0.2)])),
                           delta=float(rng.choice([0.0, 1e-7])), partition=partition)
        costs = list(ledger.partition_costs().values())
        repeats += len(set(costs)) < len(costs)
        differs += len({c.to_epsilon_delta(1e-5, conversion) for c in costs}) > 1
        each = [c.to_epsilon_delta(1e-5, conversion) for c in costs]
        assert ledger.spent() == (max(e for e, _ in each), max(d for _, d in each))
        assert ledger.rho_spent == max(c.rho for c in costs)
    # Many cases repeat a cost (a conversion is skipped) and have partitions that convert
    # differently (the maximum is not a formality).
    assert repeats > 20 and differs > 100


def test_a_nan_cost_is_unknown_and_strict_refuses_it() -> None:
    """A NaN cost anywhere makes the total NaN, whichever partition comes first, and the strict
    check fails; the same ledger with the NaN replaced by a cost within budget passes."""
    for order in (("a", "b"), ("b", "a")):
        ledger = PrivacyLedger(1.0, 1e-5)
        for partition in order:
            rho = math.nan if partition == "a" else 5.0
            ledger.add("gaussian", "x", sensitivity=1.0, noise_scale=1.0, rho=rho,
                       partition=partition)
        eps, delta = ledger.spent()
        assert math.isnan(eps) and math.isnan(delta)
        with pytest.raises(PrivacyBudgetError, match="overspent"):
            ledger.check()
    fine = PrivacyLedger(1.0, 1e-5)
    fine.add("gaussian", "x", sensitivity=1.0, noise_scale=1.0, rho=0.001, partition="a")
    fine.check()
