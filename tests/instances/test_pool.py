"""Synthetic arm-pool instance of AdaPrivate-TS (docs/ts.md, "Synthetic environment")."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits.errors import ConfigError
from dpbandits.instances.pool import PoolInstance, smallest_first
from dpbandits.instances.registry import build_instance


def make(**kw) -> PoolInstance:
    params = {"generator": "logistic_pool", "horizon": 2000, "seed": 7, **kw}
    return build_instance(params)


def test_geometry_and_candidate_sets() -> None:
    inst = make()
    env = inst.environment(3)
    assert np.linalg.norm(env.theta) == pytest.approx(2.0)
    np.testing.assert_allclose(np.linalg.norm(env.pool, axis=1), 1.0)
    assert env.pool.shape == (100, 20) and env.contexts.shape == (2000, 5, 20)
    assert all(len(set(row)) == 5 for row in env.candidates)
    np.testing.assert_array_equal(env.arms(11), env.pool[env.candidates[11]])
    np.testing.assert_allclose(env.means, 1 / (1 + np.exp(-(env.contexts @ env.theta))))


def test_candidates_are_uniform_over_the_pool() -> None:
    env = make(horizon=10_000).environment(0)
    counts = np.bincount(env.candidates.ravel(), minlength=100)
    p = 5 / 100
    se = np.sqrt(10_000 * p * (1 - p))
    assert np.all(np.abs(counts - 10_000 * p) < 5 * se)
    # position within the offered set is uniform too (no arm sits first more often)
    first = np.bincount(env.candidates[:, 0], minlength=100)
    assert np.all(np.abs(first - 100) < 5 * np.sqrt(100))


def test_common_random_numbers_and_trial_streams() -> None:
    inst = make()
    a, b = inst.environment(1), make().environment(1)
    np.testing.assert_array_equal(a.candidates, b.candidates)
    np.testing.assert_array_equal(a.uniforms, b.uniforms)
    np.testing.assert_array_equal(a.theta, b.theta)
    c = inst.environment(2)
    assert not np.array_equal(a.theta, c.theta) and not np.array_equal(a.uniforms, c.uniforms)
    shared = make(per_trial=False)
    np.testing.assert_array_equal(shared.environment(1).theta, shared.environment(2).theta)
    assert not np.array_equal(shared.environment(1).uniforms, shared.environment(2).uniforms)


def test_rewards_regret_and_reference_sums() -> None:
    env = make().environment(0)
    oracle = env.means.argmax(axis=1)
    rewards, regrets = zip(*(env.pull(t, int(i)) for t, i in enumerate(oracle)), strict=True)
    assert sum(regrets) == 0.0
    worst = [env.pull(t, int(i))[1] for t, i in enumerate(env.means.argmin(axis=1))]
    assert min(worst) >= 0 and sum(worst) > 0
    assert set(rewards) <= {0.0, 1.0}
    np.testing.assert_array_equal(rewards, (env.uniforms < env.best).astype(float))
    assert env.sum_best == pytest.approx(env.best.sum())
    assert env.sum_uniform == pytest.approx(env.means.mean(axis=1).sum())
    # realised rewards follow μ: mean of r for the oracle arm within 5 s.e. of Σμ/T
    mean_mu = env.best.mean()
    se = np.sqrt(mean_mu * (1 - mean_mu) / len(rewards))
    assert abs(np.mean(rewards) - mean_mu) < 5 * se


def test_linear_mean_model() -> None:
    env = make(link="linear").environment(0)
    theta_bar = env.theta / np.linalg.norm(env.theta)
    np.testing.assert_allclose(env.means, 0.5 * (1 + env.contexts @ theta_bar))
    assert env.means.min() >= 0 and env.means.max() <= 1
    assert make(family="linear").info.family == "linear"


def test_describe_and_info() -> None:
    inst = make()
    assert inst.describe()["n_arms"] == 100.0 and inst.info.d == 20 and inst.info.K == 5
    assert inst.info.horizon == 2000 and inst.info.S == 2.0


@pytest.mark.parametrize("params, match", [
    ({"K": 101}, "K = 101"), ({"d": 0}, "d = 0"), ({"S": -1.0}, "S = -1.0"),
    ({"link": "probit"}, "link = 'probit'"), ({"horizon": 0}, "horizon = 0"),
    ({"bogus": 1}, "unknown instance key"), ({"per_trial": "yes"}, "per_trial"),
])
def test_bad_parameters(params: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as info:
        make(**params)
    assert "\n" not in str(info.value)


def test_smallest_first_is_argsort_of_each_row() -> None:
    """The candidate table equals np.argsort(...)[:, :K]; rows with ties are sorted in full."""
    g = np.random.default_rng(2)
    u = g.random((3000, 40))
    u[::7, 3] = u[::7, 10]  # ties among the smallest in some rows
    u[::11, 0] = u[::11, 1]
    u[5] = 0.5  # a row of equal values
    for k in (1, 5, 39, 40, 45):
        np.testing.assert_array_equal(smallest_first(u.copy(), k), np.argsort(u, axis=1)[:, :k])


@pytest.mark.parametrize("link", ["logistic", "linear"])
def test_outcome_tables_are_what_pull_gives(link: str) -> None:
    env = make(horizon=300, d=4, n_arms=9, K=3, link=link).environment(2)
    rewards, regrets = env.outcome_tables()
    assert rewards.dtype == regrets.dtype == np.float64 and rewards.shape == (300, 3)
    for t in range(300):
        for i in range(3):
            assert env.pull(t, i) == (rewards[t, i], regrets[t, i])
