"""GLOC (docs/glm.md, "GLOC")."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from glm_paths import GLM, assert_same_paths

from dpbandits.contract import OutcomeTables, ProblemInfo
from dpbandits.errors import ConfigError
from dpbandits.instances.glm import GLMInstance
from dpbandits.policies import make_policy
from dpbandits.policies.gloc import gloc_radius_sq


def test_b0_matches_spec() -> None:
    rng = np.random.default_rng(0)
    s2 = ProblemInfo("probit", 3, 20, 5000, 2.0, kappa=18.3936699115)
    s3 = ProblemInfo("probit", 3, 20, 5000, 3.0, kappa=222.1475133947)
    assert make_policy("GLOC", s2, rng).B == pytest.approx(1.304797, abs=5e-7)
    assert make_policy("GLOC", s3, rng).B == pytest.approx(0.243082, abs=5e-7)


def test_radius_formula() -> None:
    """radius² = 1 + 4B/c + 8(L²/c)²·ln((2/δ)·sqrt(1 + 2B/c + 4(L²/c)⁴/δ²)) (authors' form)."""
    c, L, B, delta = 1 / 18.39, 1 / math.sqrt(2 * math.pi), 1.3, 0.02
    by_hand = 1 + 4 * B / c + 8 * (L * L / c) ** 2 * math.log(
        2 / delta * math.sqrt(1 + 2 * B / c + 4 * (L * L / c) ** 4 / delta**2)
    )
    assert gloc_radius_sq(B, c, L, delta, paper=False) == pytest.approx(by_hand, rel=1e-14)
    # Jun et al.'s form with σ = R agrees with the reference form when R = L = 1
    assert gloc_radius_sq(B, c, 1.0, delta, True) == pytest.approx(
        gloc_radius_sq(B, c, 1.0, delta, False), rel=1e-14
    )


def test_iterate_on_sphere_and_matrices() -> None:
    inst = GLMInstance("probit", 3, 10, 2.0, 300, seed=4)
    p = make_policy("GLOC", inst.info, np.random.default_rng(0), delta=0.02)
    env = inst.environment(0)
    B_prev = p.B
    for t in range(300):
        a = p.select(t, env.arms(t))
        p.update(t, env.arms(t)[a], env.pull(t, a)[0])
        assert np.linalg.norm(p.theta) == pytest.approx(2.0, rel=1e-12)
        assert p.B >= B_prev
        B_prev = p.B
    np.testing.assert_allclose(p.V_inv, np.linalg.inv(p.V), atol=1e-8)
    np.testing.assert_allclose(p.theta_hat, np.linalg.solve(p.V, p.z), atol=1e-8)


def test_ucb_uses_ons_iterate() -> None:
    info = ProblemInfo("logistic", 2, 2, 10, 1.0, kappa=4.0)
    p = make_policy("GLOC", info, np.random.default_rng(0))
    arms = np.array([[0.5, 0.0], [0.0, 0.5]])  # equal bonus
    p.theta[:] = [0.0, 1.0]
    p.z[:] = p.V @ [1.0, 0.0]  # θ̂ = V⁻¹z = (1, 0)
    assert p.select(0, arms) == 1
    faithful = make_policy("GLOC", info, np.random.default_rng(0), paper_faithful=True)
    faithful.theta[:] = [0.0, 1.0]
    faithful.z[:] = faithful.V @ [1.0, 0.0]
    np.testing.assert_allclose(faithful.theta_hat, [1.0, 0.0])
    assert faithful.select(0, arms) == 0


def test_paper_faithful_run() -> None:
    inst = GLMInstance("logistic", 3, 10, 2.0, 200, seed=6)
    p = make_policy("GLOC", inst.info, np.random.default_rng(0), paper_faithful=True)
    res = p.run(inst.environment(0))
    assert np.all(res.regret >= 0)
    assert np.linalg.norm(p.theta) <= 2.0 + 1e-9
    assert p.scale == inst.info.R


def test_regret_nonnegative_and_sublinear_signal() -> None:
    inst = GLMInstance("probit", 3, 20, 2.0, 1500, seed=109832)
    res = make_policy("GLOC", inst.info, np.random.default_rng(0), delta=0.02).run(
        inst.environment(0)
    )
    assert np.all(res.regret >= 0)
    assert res.regret[750:].mean() < res.regret[:750].mean()


def test_bad_parameters_rejected() -> None:
    info = ProblemInfo("probit", 3, 5, 10, 1.0)
    with pytest.raises(ConfigError, match="paper_faithful"):
        make_policy("GLOC", info, np.random.default_rng(0), paper_faithful="yes")


@pytest.mark.parametrize("family", ["logistic", "probit", "linear"])
@pytest.mark.parametrize("params", [{}, {"lam0": 0.5}, {"paper_faithful": True}],
                         ids=["default", "lam0", "paper"])
def test_table_rounds_and_select_update_give_the_same_run(family: str,
                                                          params: dict[str, Any]) -> None:
    for trial in (0, 1):
        assert_same_paths("GLOC", params, {**GLM, "family": family, "horizon": 400}, trial)


@pytest.mark.parametrize("spec", [{**GLM, "d": 1, "K": 1}, {**GLM, "d": 1, "K": 5},
                                  {**GLM, "d": 12, "K": 3, "S": 4.0}], ids=["d1K1", "d1", "d12"])
def test_table_rounds_at_the_edges(spec: dict[str, Any]) -> None:
    assert_same_paths("GLOC", {}, {**spec, "horizon": 300})


def test_paper_projection_keeps_the_iterate_in_the_ball() -> None:
    inst = GLMInstance("logistic", 3, 10, 1.0, 200, seed=6)
    p = make_policy("GLOC", inst.info, np.random.default_rng(0), paper_faithful=True, lam0=0.2)
    env = inst.environment(0)
    outside = 0
    for t in range(200):
        a = p.select(t, env.arms(t))
        x, r = env.arms(t)[a], env.pull(t, a)[0]
        V_inv = np.linalg.inv(p.V + np.outer(x, x))
        u = p.theta - V_inv @ ((1 / (1 + np.exp(-x @ p.theta)) - r) * x) / p.c_mu
        p.update(t, x, r)
        assert np.linalg.norm(p.theta) <= 1.0 + 1e-9
        outside += float(u @ u) > 1.0
    assert outside > 0  # the projection was needed


def test_plays_an_empty_table() -> None:
    info = ProblemInfo("probit", 3, 4, 5, 2.0, kappa=10.0)
    policy = make_policy("GLOC", info, np.random.default_rng(0))
    empty = OutcomeTables(np.empty((0, 4, 3)), np.empty((0, 4)), np.empty((0, 4)),
                          np.empty(0), np.empty(0), np.empty(0, dtype=np.int64))
    policy.play_table(empty)
    assert policy.B == make_policy("GLOC", info, np.random.default_rng(0)).B
