"""The comparisons of the accountant, ledger and rate claims (docs/reproduction.md): exact
per-trial bounds, a power-law exponent by bootstrap, nested `for_each`, each with a negative
control that must differ."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpbandits.paper.claims import Context, evaluate_claim, power_law_exponent, run_comparison
from dpbandits.paper.published import load_claims_file
from dpbandits.paper.results import Results, metric_values

from paper_helpers import frame

RNG_SEED = 20261206


def ctx(summary: pd.DataFrame, metric: str = "regret") -> Context:
    return Context(summary, metric, 0.05, "auto", 11)


@pytest.fixture(scope="module")
def rng() -> np.random.Generator:
    return np.random.default_rng(RNG_SEED)


def ledgers(spent: dict[float, list[float]], delta_spent: float = 0.02) -> pd.DataFrame:
    """Summary rows of one private algorithm: ε → each trial's ε spent (δ = 0.02)."""
    df = frame({("P", eps, 2.0): np.zeros(len(values)) for eps, values in spent.items()})
    df["epsilon_spent"] = [v for values in spent.values() for v in values]
    df["delta"] = 0.02
    df["delta_spent"] = delta_spent
    return df


def test_budget_used_is_the_larger_of_the_two_fractions():
    df = ledgers({4.0: [3.0, math.inf, math.nan]}, delta_spent=0.01)
    used = metric_values(df, "budget_used").to_numpy()
    assert used[0] == pytest.approx(0.75) and math.isinf(used[1]) and math.isnan(used[2])
    over_delta = ledgers({4.0: [1.0]}, delta_spent=0.03)
    assert metric_values(over_delta, "budget_used").iloc[0] == pytest.approx(1.5)


def test_all_at_most_holds_only_when_every_trial_is_within_budget():
    comp = {"kind": "all_at_most", "select": {"algorithm": "P"}, "threshold": 1.0,
            "tolerance": 1e-9, "for_each": "epsilon"}
    within = ledgers({4.0: [3.2, 3.9, 4.0], 8.0: [6.4, 6.5, 8.0 * (1 + 1e-12)]})
    res = run_comparison(ctx(within, "budget_used"), comp)
    assert res.status == "reproduced" and "all 3 trials" in res.reason
    # negative controls: one run past the budget, one breach (∞), one unknown cost (NaN)
    for bad in (4.0 * 1.001, math.inf, math.nan):
        breached = ledgers({4.0: [3.2, bad, 4.0], 8.0: [6.4, 6.5, 8.0]})
        out = run_comparison(ctx(breached, "budget_used"), comp)
        assert out.status == "differs" and "1 of 3 trials past 1" in out.reason
    assert "∞" in run_comparison(ctx(ledgers({4.0: [math.inf] * 3}), "budget_used"),
                                 comp).reason


def excess_frame(rng: np.random.Generator, rate: float, trials: int = 40) -> pd.DataFrame:
    """Regret of a reference and of a private algorithm whose excess is 2000·ε^rate + noise,
    on the same trials (as linear_fig2: the instance and seed shared)."""
    base = 10_000 + rng.normal(0, 300, trials)
    groups = {("Ref", None, 2.0): base}
    for eps in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100):
        groups[("Priv", float(eps), 2.0)] = (base + 2000 * eps ** rate
                                              + rng.normal(0, 150, trials))
    return frame(groups)


def test_power_law_fit_recovers_the_exponent():
    x = np.array([0.1, 0.5, 1.0, 5.0, 10.0])
    s, c = power_law_exponent(x, np.stack([3 * x ** -1.0, 7 * x ** -0.5]))
    assert s == pytest.approx([-1.0, -0.5]) and c == pytest.approx([3.0, 7.0])


def test_rate_between_reproduces_one_over_epsilon_and_rejects_other_rates(rng):
    comp = {"kind": "rate_between", "a": {"algorithm": "Priv"}, "b": {"algorithm": "Ref"},
            "over": "epsilon", "low": -1, "high": -1, "margin": 0.25}
    res = run_comparison(ctx(excess_frame(rng, -1.0)), comp)
    assert res.status == "reproduced" and res.estimate == pytest.approx(-1.0, abs=0.05)
    assert "s = " in res.measured and "paired bootstrap" in res.test
    # negative controls: an excess falling as 1/√ε, or as 1/ε², differs
    for rate in (-0.5, -2.0):
        out = run_comparison(ctx(excess_frame(rng, rate)), comp)
        assert out.status == "differs", (rate, out.reason)
    # no trials in common with the reference: it cannot answer
    lonely = excess_frame(rng, -1.0)
    lonely.loc[lonely["algorithm"] == "Ref", "seed"] += 1000
    with pytest.raises(Exception, match="same ≥ 3 trials"):
        run_comparison(ctx(lonely), comp)


def test_for_each_over_two_columns_needs_every_cell():
    rows = []
    for q in (0.1, 0.3):
        for eps in (1.0, 5.0):
            value = 0.98 if (q, eps) == (0.3, 1.0) else 1.0
            rows += [{"algorithm": "Amp", "q": q, "epsilon": eps, "instance_index": 0,
                      "seed": seed, "T": 100, "capture": value} for seed in range(12)]
    df = pd.DataFrame(rows)
    comp = {"kind": "between", "select": {"algorithm": "Amp"}, "low": 0.995, "high": 1.0,
            "for_each": ["q", "epsilon"]}
    res = run_comparison(ctx(df, "capture"), comp)
    assert res.status == "differs" and "no spread across trials: 0.98 outside" in res.reason
    assert res.measured.count("(interval") == 4 and "q = 0.3: ε = 1" in res.reason
    fine = df.assign(capture=1.0)
    assert run_comparison(ctx(fine, "capture"), comp).status == "reproduced"
    only = run_comparison(ctx(df, "capture"), {**comp, "values": [0.1]})
    assert only.status == "reproduced" and "q = 0.3" not in only.measured


REPO = Path(__file__).resolve().parents[2]


def project_claim(claim_id: str) -> dict:
    """One claim of the project's paper/claims.yaml."""
    claims = load_claims_file(REPO / "paper" / "claims.yaml")["claims"]
    return next(c for c in claims if c["id"] == claim_id)


def verdict(claim_id: str, experiment: str, summary: pd.DataFrame) -> str:
    """The verdict of a project claim on a made-up summary of its experiment."""
    results = Results({experiment: {"paper": "x"}}, {experiment: summary})
    return evaluate_claim(project_claim(claim_id), results).status


def test_the_accountant_row_differs_when_one_cell_misses_the_bound():
    rows = [{"algorithm": f"AdaPrivate-TS-Amp [q={q}]", "grid_of": "AdaPrivate-TS-Amp", "q": q,
             "epsilon": eps, "instance_index": 0, "seed": seed, "T": 10000,
             "rdp_capture": 1.0}
            for q in (0.1, 0.3, 0.5, 0.7) for eps in (0.5, 1.0, 2.0, 5.0) for seed in range(12)]
    df = pd.DataFrame(rows)
    assert verdict("ts_rdp_orders_capture", "ts_amplification", df) == "reproduced"
    low = df.assign(rdp_capture=np.where((df["q"] == 0.3) & (df["epsilon"] == 1.0), 0.9815,
                                         1.0))
    assert verdict("ts_rdp_orders_capture", "ts_amplification", low) == "differs"
    at_bound = df.assign(rdp_capture=0.9951)
    assert verdict("ts_rdp_orders_capture", "ts_amplification", at_bound) == "reproduced"


def test_the_budget_row_differs_when_one_strict_run_overspends():
    def ledger_rows(spent: float) -> pd.DataFrame:
        rows = [{"algorithm": "Private-GLM (strict)", "epsilon": eps, "delta": 0.02,
                 "epsilon_spent": 0.8 * eps, "delta_spent": 0.02, "instance_index": s,
                 "seed": seed, "T": 5000} for eps in (4.0, 6.0, 8.0) for s in range(3)
                for seed in range(10)]
        df = pd.DataFrame(rows)
        df.loc[0, "epsilon_spent"] = spent
        return df

    assert verdict("glm_budget_never_exceeded", "glm_table2", ledger_rows(3.2)) == "reproduced"
    assert verdict("glm_budget_never_exceeded", "glm_table2", ledger_rows(4.01)) == "differs"
    assert verdict("glm_budget_never_exceeded", "glm_table2", ledger_rows(math.inf)) == "differs"


def test_the_rate_row_differs_when_the_excess_does_not_fall_as_one_over_epsilon(rng):
    def regrets(rate: float) -> pd.DataFrame:
        df = excess_frame(rng, rate)
        df["policy"] = df["algorithm"].map({"Ref": "PhasedElimination",
                                            "Priv": "CentralDPElimination"})
        return df.assign(T=1_000_000)

    assert verdict("lin_central_excess_rate", "linear_fig2", regrets(-1.0)) == "reproduced"
    assert verdict("lin_central_excess_rate", "linear_fig2", regrets(-0.5)) == "differs"
