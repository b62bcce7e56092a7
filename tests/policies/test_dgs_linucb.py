"""DGS-LinUCB: per-step θ̂-perturbation with dynamic sensitivity (docs/ts.md, "DGS-LinUCB")."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits import runner
from dpbandits.contract import ProblemInfo
from dpbandits.instances.registry import build_instance
from dpbandits.policies import make_policy
from dpbandits.privacy.zcdp import rho_from_epsilon

from helpers import assert_snapped_calibration

DELTA = 1e-5


def test_noise_multiplier_at_paper_scale() -> None:
    info = ProblemInfo("logistic", 20, 5, 10_000, 2.0)
    pol = make_policy("DGS-LinUCB", info, np.random.default_rng(0), epsilon=1.0, delta=DELTA)
    assert pol.scale == pytest.approx(490.1, abs=0.05)


def test_sigma_follows_lambda_min_every_round_and_ledger_sums_to_rho() -> None:
    inst = build_instance({"generator": "logistic_pool", "seed": 2, "horizon": 120})
    env = inst.environment(0)
    pol = make_policy("DGS-LinUCB", inst.info, np.random.default_rng(0), epsilon=2.0,
                      delta=DELTA)
    rho = rho_from_epsilon(2.0, DELTA)
    a = np.eye(20)
    for t in range(120):
        arms = env.arms(t)
        i = pol.select(t, arms)
        formula = math.sqrt(120 / (2 * rho)) / np.linalg.eigvalsh(a)[0]
        assert_snapped_calibration(pol.last_sigma, formula, math.sqrt(120 / (2 * rho)), 20)
        pol.update(t, arms[i], env.pull(t, i)[0])
        a += np.outer(arms[i], arms[i])
    pol.finish()
    # one entry: the 120 releases at the largest ρ drawn of any, Δ'²/(2σ'²) ≤ ρ/T on the grid
    (entry,) = pol.ledger.entries
    assert entry.count == 120 and entry.rho * entry.count <= rho
    assert entry.rho * entry.count == pytest.approx(rho, rel=1e-5)
    assert pol.ledger.spent()[0] == pytest.approx(2.0, rel=1e-5) and pol.ledger.spent()[0] <= 2


def test_without_noise_it_is_linucb() -> None:
    """ρ = ∞ (no noise) gives LinUCB's actions."""
    inst = build_instance({"generator": "logistic_pool", "seed": 4, "horizon": 300})
    env = inst.environment(0)
    pol = make_policy("DGS-LinUCB", inst.info, np.random.default_rng(0), epsilon=1.0,
                      delta=DELTA, alpha=0.5)
    pol.scale = 0.0
    ref = make_policy("LinUCB", inst.info, np.random.default_rng(0), alpha=0.5)
    for t in range(300):
        arms = env.arms(t)
        i, j = pol.select(t, arms), ref.select(t, arms)
        assert i == j
        r = env.pull(t, i)[0]
        pol.update(t, arms[i], r)
        ref.update(t, arms[j], r)


def _trace(env, pol, tables: bool) -> tuple:
    pol.begin(env)
    loop = runner._round_loop if tables else runner._select_update_loop
    regret, _, actions = loop(pol, env)
    pol.finish()
    return (regret.tobytes(), actions.tolist(), pol.ledger.to_json(), pol.last_sigma,
            pol.noise_rng.bit_generator.state["state"])


@pytest.mark.parametrize("accounting", ["strict", "paper"])
@pytest.mark.parametrize("theta0", [None, 6e11])
def test_table_rounds_are_the_round_loops(accounting: str, theta0: float | None) -> None:
    """Compiled rounds (continuous noise: all of them; exact noise: each round's noise drawn
    here) give select → pull → update's trace; a warm start of ±6·10^11 puts θ̂ near 2^53·γ,
    where exact snapping keeps coordinates as they are."""
    instance = build_instance({"generator": "logistic_pool", "d": 5, "n_arms": 12, "K": 3,
                               "seed": 2, "horizon": 400})
    params = {} if theta0 is None else {"theta0": [theta0, -theta0, 1.0, 0.0, theta0]}
    out = []
    for tables in (True, False):
        pol = make_policy("DGS-LinUCB", instance.info, np.random.default_rng(5), epsilon=0.8,
                          delta=DELTA, accounting=accounting, **params)
        out.append(_trace(instance.environment(0), pol, tables))
    assert out[0] == out[1]
    assert pol.releases == 400
