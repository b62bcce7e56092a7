"""ECOLog (docs/glm.md, "ECOLog")."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.linalg import sqrtm
from scipy.optimize import minimize_scalar
from scipy.special import expit

from dpbandits.contract import ProblemInfo
from dpbandits.errors import ConfigError
from dpbandits.instances.glm import GLMInstance
from dpbandits.policies import make_policy
from dpbandits.policies.ecolog import (
    ecolog_gamma,
    ecolog_iterations,
    ecolog_radius_sq,
    ecolog_step_size,
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
        before = p.projections
        got = p._online_step(Q, eigs, np.sqrt(eigs), a, theta_c * 3, r, iters, bar)
        want = reference_online_step(x, r, theta_c * 3, p.V, p.V_inv, 1.0, n, bar)
        total += p.projections - before
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


@pytest.mark.parametrize("S", [1.0, 3.5])  # step size η < 1 and η > 1
def test_scalar_path_is_bitwise_the_general_loop(S: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """When no iterate can reach the boundary, the scalar recursion gives exactly the iterate of
    the general loop, and the test of that condition is never wrong."""
    info = ProblemInfo("logistic", 3, 4, 100, S, kappa=10.0)
    g = np.random.default_rng(2)
    cases, fast = [], 0
    for _ in range(300):
        p = make_policy("ECOLog", info, np.random.default_rng(0))
        B = g.normal(size=(3, 3))
        V = 10 * np.eye(3) + B @ B.T * g.uniform(0, 50)
        eigs, Q = np.linalg.eigh(V)
        x = g.normal(size=3)
        x *= g.uniform() / np.linalg.norm(x)
        theta_c = g.normal(size=3)
        theta_c *= S * g.uniform(0.3, 1.05) / np.linalg.norm(theta_c)
        r, bar, n = float(g.integers(2)), bool(g.integers(2)), int(g.integers(2, 20000))
        a = (Q.T @ x) / np.sqrt(eigs)
        args = (Q, eigs, np.sqrt(eigs), a, theta_c, r, ecolog_iterations(S, n), bar)
        cases.append((p, args))
    for p, args in cases:
        before = p.projections
        got = p._online_step(*args)
        fast += p.projections == before and p._inside_throughout(
            args[1], *_grams(args), args[5], S * S + 1e-3)
        with monkeypatch.context() as m:
            m.setattr(type(p), "_inside_throughout", lambda *_: False)
            general = make_policy("ECOLog", info, np.random.default_rng(0))
            want = general._online_step(*args)
        assert got.tobytes() == want.tobytes()
        if p._inside_throughout(args[1], *_grams(args), args[5], S * S + 1e-3):
            assert general.projections == 0
    assert 30 < fast < len(cases)  # both paths were exercised


def _grams(args: tuple) -> tuple[float, float, float]:
    """(G00, G0a, Gaa) of an online step's arguments, as `_online_step` computes them."""
    Q, eigs, root, a, theta_c = args[:5]
    z0 = root * (Q.T @ theta_c)
    inv = 1.0 / eigs
    return float(z0 @ (inv * z0)), float(z0 @ (inv * a)), float(a @ (inv * a))
