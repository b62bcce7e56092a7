"""Shuffle-GLM, Algorithm 1 (docs/glm.md, "Algorithm 1")."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits import runner
from dpbandits.errors import ConfigError
from dpbandits.instances.glm import GLMInstance
from dpbandits.links import get_link
from dpbandits.policies import make_policy
from dpbandits.policies import shuffle_glm as sg

DELTA = 0.02


@pytest.mark.parametrize("horizon", [1000, 20000, 10**6])
def test_batch_schedule(horizon: int) -> None:
    m = sg.n_batches_default(horizon)
    assert m == math.ceil(math.log2(math.log2(horizon))) + 1
    alpha = sg.alpha_default(horizon, m)
    first = sg.warmup_length(horizon, 3, 2.0, 20.0, 12.0, alpha, cap=True)
    assert first == min(max(90, math.ceil(math.sqrt(horizon))), horizon // 4)
    lengths = sg.batch_schedule(horizon, first, alpha, m)
    assert sum(lengths) == horizon and len(lengths) <= m
    nominal = [first, math.ceil(alpha)]
    for _ in range(3, m + 1):
        nominal.append(math.ceil(alpha * math.sqrt(nominal[-1])))
    assert abs(nominal[-1] - horizon) <= 0.01 * horizon  # nominal B_M ≈ T
    assert lengths[:-1] == nominal[: len(lengths) - 1]


def test_uncapped_warmup_is_huge_and_schedule_extends() -> None:
    alpha = sg.alpha_default(5000, 4)
    assert sg.warmup_length(5000, 3, 3.0, 225.0, 18.0, alpha, cap=False) == 5000
    assert sg.batch_schedule(100, 10, 2.0, 3) == [10, 2, 88]  # last batch extended to T


def _policy(horizon: int, eps: float, **params) -> tuple[sg.ShuffleGLM, GLMInstance]:
    inst = GLMInstance("logistic", 3, 10, 2.0, horizon, 4)
    pol = make_policy("Shuffle-GLM", inst.info, np.random.default_rng(0), epsilon=eps,
                      delta=DELTA, **params)
    return pol, inst


def _estimates(rng: np.random.Generator, count: int, d: int = 3) -> sg.Estimates:
    """`count` random estimates θ̂_j, positive definite V_j as eigen-pairs and width scales."""
    vecs = np.array([np.linalg.qr(rng.normal(size=(d, d)))[0] for _ in range(count)])
    return sg.Estimates(rng.normal(size=(count, d)) * 3, rng.uniform(0.01, 5, (count, d)),
                        np.ascontiguousarray(vecs), rng.uniform(0.5, 2.0, count))


def _dense_norms(arms: np.ndarray, est: sg.Estimates, j: int) -> np.ndarray:
    """‖x‖_{V_j⁻¹} of every arm from V_j = Q diag(λ) Qᵀ."""
    v = est.vecs[j] @ np.diag(est.vals[j]) @ est.vecs[j].T
    return np.sqrt(np.einsum("ij,ij->i", arms @ np.linalg.inv(v), arms))


def test_survivors_are_successive_elimination() -> None:
    """The arms kept against the dense formula, estimate after estimate: never none, and the
    arm of the largest lower bound always kept."""
    rng = np.random.default_rng(1)
    fewer = 0
    for _ in range(300):
        count = int(rng.integers(1, 4))
        est = _estimates(rng, count)
        arms = rng.normal(size=(int(rng.integers(1, 12)), 3)) * 0.5
        alive = np.empty(len(arms), dtype=np.int64)
        m = sg.survivors(arms, est, count, alive)
        expected = np.arange(len(arms))
        for j in range(count):
            x = arms[expected]
            width = est.scale[j] * _dense_norms(x, est, j)
            centre = x @ est.theta[j]
            expected = expected[centre + width >= (centre - width).max() - 1e-12]
        assert alive[:m].tolist() == expected.tolist() and m >= 1
        fewer += m < len(arms)
    assert fewer > 100


def test_design_points_are_the_rescaled_survivors() -> None:
    """w(x) = μ̇(⟨x, θ̂₁⟩)/exp(R·min(2S, γκ^p‖x‖_{V₁⁻¹})) and the points √w·x (w·x)."""
    rng = np.random.default_rng(2)
    link = get_link("logistic")
    for scale_sqrt in (True, False):
        est = _estimates(rng, 2)
        arms = rng.normal(size=(8, 3)) * 0.5
        rule = sg.Rule(1.5, 4.0, 1.0, link.kind, scale_sqrt, 0.05, 10_000)
        alive = np.array([1, 4, 6])
        points = sg.design_points(arms, alive, 3, est, 2, rule)
        x = arms[alive]
        beta = np.exp(np.minimum(4.0, 1.5 * _dense_norms(x, est, 0)))
        w = link.dot(x @ est.theta[0]) / beta
        weights = [sg.arm_weight(row, est, 2, rule) for row in x]
        np.testing.assert_allclose(weights, w, rtol=1e-12)
        assert sg.arm_weight(x[0], est, 0, rule) == 1.0
        factor = np.sqrt(w) if scale_sqrt else w
        np.testing.assert_allclose(points, factor[:, None] * x, rtol=1e-12)


def _select_update(pol: sg.ShuffleGLM, env) -> tuple[np.ndarray, ...]:
    """The trace of the round-by-round path (select → pull → update)."""
    pol.begin(env)
    trace = runner._select_update_loop(pol, env)
    pol.finish()
    return trace


@pytest.mark.parametrize("accounting, params", [
    ("strict", {}), ("paper", {"c_b": 1.0, "log_arg": "practical", "scale_sqrt": False})])
def test_table_path_is_the_select_update_path(accounting: str, params: dict) -> None:
    """The compiled rounds on pre-drawn tables and select/update round by round: the same arms,
    regret, rewards, events and ledger."""
    inst = GLMInstance("logistic", 3, 10, 2.0, 1500, 4)
    make = lambda: make_policy("Shuffle-GLM", inst.info, np.random.default_rng(3),  # noqa: E731
                               epsilon=4.0, delta=DELTA, accounting=accounting,
                               gd_max_iters=200, **params)
    tables, rounds = make(), make()
    env = inst.environment(1)
    assert runner.outcome_tables(tables, env) is not None
    result = runner.run_policy(tables, env)
    regret, reward, actions = _select_update(rounds, inst.environment(1))
    assert result.actions.tolist() == actions.tolist()
    assert result.regret.tolist() == regret.tolist()
    assert result.reward.tolist() == reward.tolist()
    for name, value in tables.events().items():
        assert value.tolist() == rounds.events()[name].tolist(), name
    assert tables.ledger.to_json() == rounds.ledger.to_json()
    assert len(set(actions.tolist())) > 3 and tables.count == len(tables.lengths) - 1


def test_run_ledger_and_batches() -> None:
    pol, inst = _policy(1200, 4.0, gd_max_iters=300)
    result = pol.run(inst.environment(0))
    assert result.regret.shape == (1200,) and result.regret.min() >= 0
    assert pol.batch == len(pol.lengths)
    assert len(pol.theta) == len(pol.lengths) - 1
    ledger = pol.ledger
    eps, delta = ledger.spent()
    assert eps <= 4.0 * (1 + 1e-9) and delta <= DELTA * (1 + 1e-9)
    parts = ledger.partition_costs()  # one partition per batch that released something
    assert sorted(parts) == [f"batch {k}" for k in range(1, len(pol.lengths))]
    assert eps == pytest.approx(max(c.epsilon for c in parts.values()))
    comps = [e.component for e in ledger.entries]
    assert comps.count("batch 1 Gram matrix") == 1 and "batch 2 estimate" in comps
    for e in ledger.entries:
        if "estimate" in e.component:
            assert e.epsilon <= 2.0 * (1 + 1e-9)
    assert np.all(result.events["survivors"] >= 1)
    assert np.all([np.linalg.norm(t) <= 2.0 + 1e-12 for t in pol.theta])


def test_practical_constant_declares_no_guarantee() -> None:
    pol, inst = _policy(400, 2.0, c_b=1.0, log_arg="practical", gd_max_iters=50,
                        accounting="paper")
    pol.run(inst.environment(0))
    assert pol.ledger.spent()[0] == math.inf
    assert "no formal guarantee" in pol.ledger.breaches[0]


@pytest.mark.parametrize("params", [{"c_b": 1.0}, {"log_arg": "practical"},
                                    {"c_b": 1.0, "log_arg": "practical"}])
def test_strict_refuses_constants_without_a_guarantee(params: dict) -> None:
    with pytest.raises(ConfigError, match="not allowed with accounting = strict") as err:
        _policy(100, 2.0, **params)
    assert "\n" not in str(err.value)


def test_strict_clips_contexts_to_the_unit_ball() -> None:
    pol, _ = _policy(100, 2.0)
    arms = np.array([[3.0, 4.0, 0.0], [0.1, 0.2, 0.2]])
    np.testing.assert_allclose(pol.prepare_arms(arms), [[0.6, 0.8, 0.0], [0.1, 0.2, 0.2]])


def test_regret_is_sublinear_with_negligible_noise() -> None:
    """ε huge, B₁ capped, practical constant: the regret grows sublinearly.

    Shortened horizon, so λ's data-free part and γ are scaled down (the defaults need
    T ≈ 2·10⁴ before elimination bites; see benchmarks/bench_private_glm.py).
    """
    pol, inst = _policy(3000, 1e6, c_b=1.0, log_arg="practical", gd_max_iters=300,
                        lambda_base=1.0, gamma=1.0, accounting="paper")
    regret = pol.run(inst.environment(0)).regret
    assert regret[1500:].mean() < regret[:1500].mean()


@pytest.mark.parametrize("params", [
    {"n_batches": 0}, {"alpha": -1.0}, {"batch_growth": "cubic"}, {"c_b": 0.0},
    {"log_arg": "x"}, {"gd_step": "y"}, {"warmup_length": 0}, {"design_tol": 2.0},
    {"gd_max_iters": 0}, {"scale_sqrt": "yes"}, {"nope": 1},
])
def test_bad_params(params: dict) -> None:
    with pytest.raises(ConfigError) as err:
        _policy(100, 2.0, **params)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("eps, delta", [(0.0, DELTA), (-1.0, DELTA), (2.0, 0.0), (2.0, 1.0)])
def test_bad_budget(eps: float, delta: float) -> None:
    inst = GLMInstance("logistic", 3, 10, 2.0, 100, 4)
    with pytest.raises(ConfigError):
        make_policy("Shuffle-GLM", inst.info, np.random.default_rng(0), epsilon=eps, delta=delta)
