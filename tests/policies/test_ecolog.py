"""ECOLog (docs/glm.md, "ECOLog")."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from glm_paths import GLM, assert_same_paths
from scipy.linalg import sqrtm
from scipy.optimize import minimize_scalar
from scipy.special import expit

from dpbandits.contract import ProblemInfo
from dpbandits.errors import ConfigError
from dpbandits.instances.glm import GLMInstance
from dpbandits.policies import make_policy
from dpbandits.policies.ecolog import (
    PROJECTIONS,
    bounded_multiplier,
    ecolog_gamma,
    ecolog_iterations,
    ecolog_radius_sq,
    ecolog_step_size,
    online_step,
)


def test_step_and_iteration_formulas() -> None:
    # η = 0.75/(1/4 + 1/(1 + 3.5/2)) = 0.75/(0.25 + 1/2.75)
    assert ecolog_step_size(3.5) == pytest.approx(0.75 / (0.25 + 1 / 2.75), rel=1e-15)
    assert ecolog_step_size(2.0) == pytest.approx(1.0, rel=1e-15)  # 0.75/(0.25 + 0.5)
    # (9/4 + 3.5/8)·ln(3.5·2) = 2.6875·1.94591 = 5.2296 → ceil 6 → 6/0.75 = 8
    assert ecolog_iterations(3.5, 2) == 8
    # (9/4 + 3.5/8)·ln(3.5·15000) = 2.6875·10.8685 = 29.209 → 30 → 40
    assert ecolog_iterations(3.5, 15000) == 40
    # (9/4 + 2/8)·ln(2·5000) = 2.5·9.2103 = 23.03 → 24 → 32
    assert ecolog_iterations(2.0, 5000) == 32


def test_confidence_formulas() -> None:
    lam, delta = 10.0, 0.02
    g1 = math.sqrt(10) / 2 + 2 / math.sqrt(10) * math.log(2 * math.sqrt(1 + 1 / 40) / 0.02)
    assert ecolog_gamma(lam, 1, delta) == pytest.approx(g1, rel=1e-14)
    assert ecolog_gamma(lam, 1, delta) == pytest.approx(4.50151, abs=1e-5)
    assert ecolog_radius_sq(lam, 3.5, g1, -1.0) == pytest.approx(245 + 20.25 * g1 - 1.0)


def reference_online_step(x, r, theta_c, V, V_inv, S, n, bar):
    """The authors' literal OnlineStep: sqrtm, vector iterations, bounded-search projection."""
    M, M_inv = np.real(sqrtm(V)), np.real(sqrtm(V_inv))
    z0 = M @ theta_c
    z = z0
    a = M_inv @ x
    eta = 0.75 / (1 / 4 + 1 / (1 + S / 2))
    iters = int((1 / 0.75) * math.ceil((9 / 4 + S / 8) * math.log(S * n)))
    for _ in range(iters):
        p = expit(z @ a)
        grad = z - z0 + ((2 * p - 1) if bar else (p - r)) * a
        y = z - eta * grad
        if y @ np.linalg.solve(V, y) - S**2 < 1e-3:
            z = y
            continue
        w = M @ y

        def h(lam, w=w):
            return lam * S**2 + w @ np.linalg.solve(V + lam * np.eye(len(w)), w)

        lam = minimize_scalar(h, bounds=(0, 1000), method="bounded",
                              options={"maxiter": 500}).x
        z = M @ np.linalg.solve(V + lam * np.eye(len(w)), w)
    return M_inv @ z


@pytest.mark.parametrize("projection", ["bounded", "exact"])
def test_online_step_matches_literal_spec(projection: str) -> None:
    info = ProblemInfo("logistic", 3, 4, 100, 1.0, kappa=10.0)
    p = make_policy("ECOLog", info, np.random.default_rng(0), ell_projection=projection)
    g = np.random.default_rng(1)
    B = g.normal(size=(3, 3))
    p.V = 10 * np.eye(3) + B @ B.T
    p.V_inv = np.linalg.inv(p.V)
    x = g.normal(size=3)
    x /= 1.2 * np.linalg.norm(x)
    theta_c = np.array([0.6, -0.7, 0.2])  # norm 0.94: the steps leave the unit ball
    n = 50
    eigs, Q = np.linalg.eigh(p.V)
    a = (Q.T @ x) / np.sqrt(eigs)
    iters = ecolog_iterations(1.0, n)
    total = 0
    for bar, r in ((False, 1.0), (False, 0.0), (True, 0.0)):
        counts = np.zeros(5, dtype=np.int64)
        got = np.empty(3)
        slope, offset = (2.0, -1.0) if bar else (1.0, -r)
        online_step(Q, eigs, a, theta_c * 3, slope, offset, iters, 1.0, p.step_size,
                    projection == "exact", counts, got)
        want = reference_online_step(x, r, theta_c * 3, p.V, p.V_inv, 1.0, n, bar)
        total += counts[PROJECTIONS]
        np.testing.assert_allclose(got, want, atol=2e-5 if projection == "exact" else 1e-8)
    assert total > 0  # the projection branch was exercised


def test_nan_compat_and_clamp() -> None:
    info = ProblemInfo("logistic", 2, 3, 10, 1.0, kappa=4.0)
    arms = np.array([[0.0, 0.1], [0.9, 0.0], [0.0, 0.5]])
    clamp = make_policy("ECOLog", info, np.random.default_rng(0))
    clamp.theta = np.array([1.0, 0.0])
    clamp.cum = -1e6
    assert clamp.select(0, arms) == 1  # radius clamped to 0: pure mean
    assert clamp.diagnostics()["clamp_events"] == 1
    compat = make_policy("ECOLog", info, np.random.default_rng(0), nan_compat=True)
    compat.theta = np.array([1.0, 0.0])
    compat.cum = -1e6
    assert compat.select(0, arms) == 0  # NaN indices: the reference plays the first arm
    assert compat.diagnostics()["clamp_events"] == 1


def test_short_run() -> None:
    inst = GLMInstance("logistic", 3, 10, 2.0, 300, seed=7)
    p = make_policy("ECOLog", inst.info, np.random.default_rng(0), delta=0.02)
    res = p.run(inst.environment(0))
    assert np.all(res.regret >= 0) and np.all(np.isfinite(res.regret))
    assert p.n == 301
    assert np.linalg.norm(p.theta) <= 2.0 * (1 + 1e-3)
    np.testing.assert_allclose(p.V_inv, np.linalg.inv(p.V), atol=1e-8)
    assert set(res.diagnostics) >= {"clamp_events", "sensitivity_violations", "projections"}


def test_logistic_only_and_bad_parameters() -> None:
    with pytest.raises(ConfigError, match="family"):
        make_policy("ECOLog", ProblemInfo("probit", 3, 5, 10, 1.0), np.random.default_rng(0))
    info = ProblemInfo("logistic", 3, 5, 10, 1.0)
    with pytest.raises(ConfigError, match="ell_projection"):
        make_policy("ECOLog", info, np.random.default_rng(0), ell_projection="sqrtm")
    with pytest.raises(ConfigError, match="lam0"):
        make_policy("ECOLog", info, np.random.default_rng(0), lam0=0.0)


def test_bounded_multiplier_is_scipys_bounded_search() -> None:
    """The reference's multiplier: scipy's minimize_scalar(method="bounded") on
    h(λ) = λS² + Σ wᵢ/(eᵢ + λ) over [0, 1000], bit for bit."""
    g = np.random.default_rng(3)
    for _ in range(200):
        d = int(g.integers(1, 6))
        eigs = np.sort(g.uniform(0.05, 20.0, size=d))
        weights = eigs * (g.normal(size=d) * g.uniform(0.1, 10.0)) ** 2
        target = float(g.uniform(0.1, 10.0))

        def h(lam, weights=weights, eigs=eigs, target=target):
            return lam * target + float(np.sum(weights / (eigs + lam)))

        want = minimize_scalar(h, bounds=(0.0, 1000.0), method="bounded",
                               options={"maxiter": 500}).x
        assert bounded_multiplier(weights, eigs, target) == want


CASES: list[tuple[dict[str, Any], dict[str, Any]]] = [  # (parameters, instance)
    ({}, GLM),  # no projection
    ({"lam0": 0.5}, GLM),  # steps that project
    ({"lam0": 0.05, "ell_projection": "bounded"}, GLM),
    ({"lam0": 0.05}, {**GLM, "d": 2, "S": 5.0}),  # σ̇(xᵀθ̄) > 2σ̇(xᵀθ) in some rounds
    ({}, {**GLM, "d": 1, "K": 1}),
    ({"lam0": 0.5}, {**GLM, "d": 1, "K": 5}),
]


@pytest.mark.parametrize("params,spec", CASES, ids=lambda c: str(c))
def test_table_rounds_and_select_update_give_the_same_run(params: dict[str, Any],
                                                          spec: dict[str, Any]) -> None:
    for trial in (0, 1):
        run = assert_same_paths("ECOLog", params, {**spec, "horizon": 400}, trial)
    diagnostics = dict(run["diagnostics"])
    if params.get("lam0") == 0.5 and spec is GLM:
        assert float(diagnostics["'projections'"][1]) > 0
    if spec.get("S") == 5.0:
        assert float(diagnostics["'sensitivity_violations'"][1]) > 0


@pytest.mark.parametrize("nan_compat", [False, True])
def test_a_negative_radius_is_clamped_or_plays_the_first_arm(nan_compat: bool) -> None:
    """radius² < 0 (a cumulative-loss term far below zero): clamped, or arm 0 played, on both
    paths."""

    def low(policy: Any) -> None:
        policy.cum = -1e4

    run = assert_same_paths("ECOLog", {"nan_compat": nan_compat}, {**GLM, "horizon": 200},
                            change=low)
    assert dict(run["diagnostics"])["'clamp_events'"] == ("number", "200.0")
    assert (set(run["actions"]) == {0}) == nan_compat


def test_no_iterations_when_the_precision_is_already_met() -> None:
    """S·n < 1 makes the iteration count ≤ 0: the online steps leave θ where it is (the
    reference's `range` of it is empty)."""
    inst = GLMInstance("logistic", 3, 5, 0.1, 4, seed=7)
    assert ecolog_iterations(0.1, 2) <= 0
    p = make_policy("ECOLog", inst.info, np.random.default_rng(0))
    env = inst.environment(0)
    a = p.select(0, env.arms(0))
    p.update(0, env.arms(0)[a], 1.0)
    np.testing.assert_allclose(p.theta, 0.0, atol=1e-15)
    assert p.diagnostics()["projections"] == 0
