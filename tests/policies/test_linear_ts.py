"""LinUCB and LinTS: decision rules, determinism, non-private sanity (docs/ts.md)."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits import runner
from dpbandits.errors import ConfigError
from dpbandits.instances.registry import build_instance
from dpbandits.policies import make_policy
from dpbandits.policies.linear_ts import LinTS

POOL = {"generator": "logistic_pool", "seed": 11}


def test_linucb_scores_match_dense_formula() -> None:
    inst = build_instance({**POOL, "horizon": 60, "d": 4, "n_arms": 10})
    env = inst.environment(0)
    pol = make_policy("LinUCB", inst.info, np.random.default_rng(0), alpha=0.7)
    a, b = np.eye(4), np.zeros(4)
    for t in range(60):
        arms = env.arms(t)
        inv = np.linalg.inv(a)
        score = arms @ inv @ b + 0.7 * np.sqrt(np.einsum("ij,jk,ik->i", arms, inv, arms))
        i = pol.select(t, arms)
        assert score[i] >= score.max() - 1e-12  # the argmax, up to rounding on exact ties
        r, _ = env.pull(t, i)
        pol.update(t, arms[i], r)
        a += np.outer(arms[i], arms[i])
        b += r * arms[i]


def test_lints_sample_is_posterior_draw() -> None:
    """With the same z, θ̃ = A⁻¹b + v·L⁻ᵀz; check the chosen arm against a dense computation."""
    inst = build_instance({**POOL, "horizon": 40, "d": 3, "n_arms": 8})
    env = inst.environment(1)
    pol = make_policy("LinTS", inst.info, np.random.default_rng(4), v=1.5)
    twin = np.random.default_rng(4).spawn(3)[0]
    a, b = np.eye(3), np.zeros(3)
    for t in range(40):
        arms = env.arms(t)
        chol = np.linalg.cholesky(a)
        sample = np.linalg.solve(a, b) + 1.5 * np.linalg.solve(chol.T, twin.standard_normal(3))
        i = pol.select(t, arms)
        assert i == int(np.argmax(arms @ sample))
        r, _ = env.pull(t, i)
        pol.update(t, arms[i], r)
        a += np.outer(arms[i], arms[i])
        b += r * arms[i]


def test_deterministic_given_rng() -> None:
    inst = build_instance({**POOL, "horizon": 300})
    runs = [make_policy("LinTS", inst.info, np.random.default_rng(9)).run(inst.environment(0))
            for _ in range(2)]
    np.testing.assert_array_equal(runs[0].regret, runs[1].regret)


@pytest.mark.parametrize("name", ["LinUCB", "LinTS"])
def test_non_private_sanity_at_paper_scale(name: str) -> None:
    """Checklist 22: regret < 0.5 × uniform; late slope < 0.7 × early slope (T = 10⁴)."""
    inst = build_instance({**POOL, "horizon": 10_000})
    env = inst.environment(0)
    result = make_policy(name, inst.info, np.random.default_rng(0)).run(env)
    uniform = env.sum_best - env.sum_uniform
    assert result.regret.sum() < 0.5 * uniform
    early = result.regret[:1000].mean()
    late = result.regret[8000:].mean()
    assert late < 0.7 * early


@pytest.mark.parametrize("name, params, match", [
    ("LinUCB", {"alpha": -1.0}, "alpha"), ("LinTS", {"v": 0.0}, "v = 0.0"),
    ("LinTS", {"v": -2}, "v = -2"), ("LinTS", {"lam": 0}, "lam = 0"),
    ("LinUCB", {"beta": 1}, "unknown parameter"),
])
def test_bad_parameters(name: str, params: dict, match: str) -> None:
    inst = build_instance({**POOL, "horizon": 10})
    with pytest.raises(ConfigError, match=match) as info:
        make_policy(name, inst.info, np.random.default_rng(0), **params)
    assert "\n" not in str(info.value)


def test_a_subclass_plays_round_by_round_unless_it_declares_tables() -> None:
    """`plays_tables` is not inherited: a LinTS that chooses otherwise is asked every round."""
    asked: list[int] = []

    class FirstArmTS(LinTS):
        def choose(self, t: int, arms: np.ndarray) -> int:
            asked.append(t)
            return 0

    instance = build_instance({**POOL, "horizon": 50})
    env = instance.environment(0)
    policy = FirstArmTS(instance.info, np.random.default_rng(0))
    policy.begin(env)
    assert runner.plays_tables(LinTS) and not runner.plays_tables(FirstArmTS)
    runner._round_loop(policy, env)
    assert asked == list(range(50))


@pytest.mark.parametrize("name", ["LinUCB", "LinTS"])
def test_the_round_loop_without_outcome_tables_gives_the_table_rounds_trace(name: str) -> None:
    instance = build_instance({**POOL, "horizon": 120})
    traces = []
    for tables in (True, False):
        env = instance.environment(0)
        if not tables:
            env.outcome_tables = lambda: None  # type: ignore[method-assign]
        policy = make_policy(name, instance.info, np.random.default_rng([0, 17]))
        policy.begin(env)
        assert (runner.outcome_tables(policy, env) is not None) == tables
        regret, _, actions = runner._round_loop(policy, env)
        traces.append((regret.tobytes(), actions.tolist()))
    assert traces[0] == traces[1]
