"""GLM-UCB (docs/glm.md, "GLM-UCB")."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from glm_paths import GLM, assert_same_paths, play
from scipy.special import ndtr

import dpbandits.policies.glm_ucb as glm_ucb_module
from dpbandits.contract import ProblemInfo
from dpbandits.errors import ConfigError
from dpbandits.instances.glm import GLMInstance
from dpbandits.policies import get_policy_class, make_policy
from dpbandits.policies.glm_ucb import glm_ucb_c


def probit_info(kappa: float, d: int = 3, horizon: int = 5000, S: float = 2.0) -> ProblemInfo:
    return ProblemInfo(family="probit", d=d, K=20, horizon=horizon, S=S, R=1.0, kappa=kappa)


def test_constants_match_spec() -> None:
    assert glm_ucb_c(3.0) == pytest.approx(2.005406, abs=5e-7)
    assert glm_ucb_c(5.0) == pytest.approx(1.916493, abs=5e-7)
    rng = np.random.default_rng(0)
    one = make_policy("GLM-UCB", probit_info(1.0), rng, delta=0.02)
    # the formula gives ρ = 14.78028·κ (docs/glm.md, "GLM-UCB", rounds it to 14.780·κ); the
    # products below (271.8635 at κ = 18.39367, 3283.402 at κ = 222.1475) agree with it
    assert one.rho == pytest.approx(14.78028, abs=5e-6)
    p = make_policy("GLM-UCB", probit_info(18.3936699115), rng, delta=0.02)
    assert p.rho == pytest.approx(271.8635, abs=5e-5)
    p = make_policy("GLM-UCB", probit_info(222.1475133947, S=3.0), rng, delta=0.02)
    assert p.rho == pytest.approx(3283.402, abs=5e-4)
    p = make_policy("GLM-UCB", probit_info(193.1841005125, d=5, S=3.0), rng, delta=0.02)
    assert p.rho == pytest.approx(3585.474, abs=5e-4)
    assert make_policy("GLM-UCB", probit_info(1.0), rng).conf_delta == 0.02


def test_initial_estimates_are_two_normal_draws_in_order() -> None:
    p = make_policy("GLM-UCB", probit_info(2.0), np.random.default_rng(123))
    g = np.random.default_rng(123)
    first, second = g.normal(0, 1, 3), g.normal(0, 1, 3)
    np.testing.assert_array_equal(p.theta_hat, first)
    np.testing.assert_array_equal(p.theta_tilde, second)


def test_bonus_factor_sqrt_log_t() -> None:
    """Probit: bonus ρ·sqrt(ln t) (zero at t = 1); logistic: ρ unless sqrt_log_t_for_all."""
    arms = np.array([[0.9, 0.0, 0.0], [0.0, 0.1, 0.0]])
    probit = make_policy("GLM-UCB", probit_info(50.0), np.random.default_rng(1))
    probit.theta_tilde = np.array([-1.0, 0.0, 0.0])
    assert probit.select(0, arms) == 1  # no bonus at t = 1: pure mean
    logistic_info = ProblemInfo("logistic", 3, 2, 100, 2.0, kappa=50.0)
    logistic = make_policy("GLM-UCB", logistic_info, np.random.default_rng(1))
    logistic.theta_tilde = np.array([-1.0, 0.0, 0.0])
    assert logistic.select(0, arms) == 0  # bonus ρ‖x‖ dominates
    flat = make_policy("GLM-UCB", logistic_info, np.random.default_rng(1),
                       sqrt_log_t_for_all=True)
    flat.theta_tilde = np.array([-1.0, 0.0, 0.0])
    assert flat.select(0, arms) == 1


@pytest.mark.parametrize("solver", ["newton", "compat"])
def test_short_run(solver: str) -> None:
    inst = GLMInstance("probit", 3, 10, 2.0, 120, seed=5)
    p = make_policy("GLM-UCB", inst.info, np.random.default_rng(2), delta=0.02, solver=solver)
    res = p.run(inst.environment(0))
    assert res.regret.shape == (120,) and np.all(res.regret >= 0)
    assert np.all(np.isfinite(res.regret)) and set(np.unique(res.reward)) <= {0.0, 1.0}
    diag = res.diagnostics
    assert diag["fits"] == 120
    np.testing.assert_allclose(p.V_inv, np.linalg.inv(p.V), atol=1e-8)
    np.testing.assert_array_equal(p.theta_tilde, p.theta_hat)


def test_solver_result_used_even_on_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    """GLM-UCB takes the compat solver's θ even when success is False, as in the authors' code."""
    marker = np.array([0.25, -0.5, 0.75])

    def failing(X, r, link, lam, theta0, **kwargs):
        kwargs["stats"].record(False)
        return marker + X.shape[0], False

    monkeypatch.setattr(glm_ucb_module, "compat_mle", failing)
    inst = GLMInstance("probit", 3, 5, 2.0, 4, seed=1)
    p = make_policy("GLM-UCB", inst.info, np.random.default_rng(0), solver="compat")
    env = inst.environment(0)
    for t in range(3):
        a = p.select(t, env.arms(t))
        p.update(t, env.arms(t)[a], env.pull(t, a)[0])
        np.testing.assert_array_equal(p.theta_hat, marker + t + 1)
        np.testing.assert_array_equal(p.theta_tilde, marker + t + 1)
    assert p.diagnostics()["solver_failures"] == 3


def test_projection_option_stays_in_ball() -> None:
    inst = GLMInstance("logistic", 3, 5, 1.0, 30, seed=3)
    p = make_policy("GLM-UCB", inst.info, np.random.default_rng(0), do_projection=True)
    env = inst.environment(0)
    projected = 0
    for t in range(30):
        a = p.select(t, env.arms(t))
        before = p.projections
        p.update(t, env.arms(t)[a], env.pull(t, a)[0])
        if p.projections > before:
            projected += 1
            assert np.linalg.norm(p.theta_hat) <= 1.0
            assert np.linalg.norm(p.theta_tilde) <= 1.0 + 1e-6
        else:
            np.testing.assert_array_equal(p.theta_tilde, p.theta_hat)
    assert projected > 0


def test_bad_parameters_rejected() -> None:
    info = probit_info(2.0)
    rng = np.random.default_rng(0)
    with pytest.raises(ConfigError, match="solver"):
        make_policy("GLM-UCB", info, rng, solver="bfgs")
    with pytest.raises(ConfigError, match="lam0"):
        make_policy("GLM-UCB", info, rng, lam0=-1.0)
    with pytest.raises(ConfigError, match="bogus"):
        make_policy("GLM-UCB", info, rng, bogus=1)
    with pytest.raises(ConfigError, match="delta"):
        make_policy("GLM-UCB", info, rng, delta=1.5)
    linear = ProblemInfo("linear", 3, 5, 10, 1.0)
    with pytest.raises(ConfigError, match="compat"):
        make_policy("GLM-UCB", linear, rng, solver="compat")
    assert math.isfinite(make_policy("GLM-UCB", linear, rng).rho)


@pytest.mark.parametrize("family", ["logistic", "probit", "linear"])
@pytest.mark.parametrize("params", [{}, {"sqrt_log_t_for_all": True, "lam0": 0.5},
                                    {"newton_cap": 0.3}, {"do_projection": True}],
                         ids=["default", "sqrt_log", "capped", "projection"])
def test_table_rounds_and_select_update_give_the_same_run(family: str,
                                                          params: dict[str, Any]) -> None:
    horizon = 60 if params.get("do_projection") else 300
    run = assert_same_paths("GLM-UCB", params, {**GLM, "family": family, "horizon": horizon})
    capped = float(dict(run["diagnostics"])["'norm_cap_events'"][1])
    assert (capped > 0) == ("newton_cap" in params)


@pytest.mark.parametrize("spec", [{**GLM, "d": 1, "K": 1}, {**GLM, "d": 1, "K": 5}],
                         ids=["d1K1", "d1"])
def test_table_rounds_at_the_edges(spec: dict[str, Any]) -> None:
    assert_same_paths("GLM-UCB", {}, {**spec, "horizon": 200})


def test_compat_table_rounds_are_the_round_loops() -> None:
    assert_same_paths("GLM-UCB", {"solver": "compat"}, {**GLM, "family": "probit",
                                                        "horizon": 60})


@pytest.mark.parametrize("family", ["logistic", "probit"])
def test_newton_rounds_are_compiled(monkeypatch: pytest.MonkeyPatch, family: str) -> None:
    """Newton's table rounds never go through `select`, those whose fit is capped onto the
    ball included."""
    cls = get_policy_class("GLM-UCB")
    monkeypatch.setattr(cls, "select", lambda *_: pytest.fail("a round through select"))
    run = play("GLM-UCB", {"newton_cap": 0.3}, {**GLM, "family": family, "horizon": 100}, True)
    assert float(dict(run["diagnostics"])["'norm_cap_events'"][1]) > 0


def test_refits_are_the_maximum_likelihood_estimate() -> None:
    """After every update θ̂ is the regularised MLE on the data so far (the canonical
    gradient vanishes to the solver's tolerance)."""
    inst = GLMInstance("probit", 3, 10, 2.0, 200, seed=5)
    p = make_policy("GLM-UCB", inst.info, np.random.default_rng(2))
    env = inst.environment(0)
    X, r = [], []
    for t in range(200):
        a = p.select(t, env.arms(t))
        reward = env.pull(t, a)[0]
        p.update(t, env.arms(t)[a], reward)
        X.append(env.arms(t)[a])
        r.append(reward)
        Xa, ra = np.array(X), np.array(r)
        z = Xa @ p.theta_hat
        grad = Xa.T @ (ndtr(z) - ra) + 2.0 * p.lam0 * p.theta_hat
        assert np.abs(grad).max() <= 1e-8 * (t + 1)
    np.testing.assert_array_equal(p.theta_tilde, p.theta_hat)
