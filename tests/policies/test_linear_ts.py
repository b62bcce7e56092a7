"""LinUCB and LinTS: decision rules, determinism, non-private sanity (docs/ts.md)."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits.errors import ConfigError
from dpbandits.instances.registry import build_instance
from dpbandits.policies import make_policy

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
