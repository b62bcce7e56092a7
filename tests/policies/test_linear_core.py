"""Shared linear-policy machinery: clipping, Cholesky-based draws and widths, warm start."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits.contract import ProblemInfo, RoundEnvironment
from dpbandits.errors import ConfigError
from dpbandits.policies import make_policy
from dpbandits.policies.linear_core import (
    cho_solve,
    cholesky,
    clip_arms,
    clip_reward,
    clip_table,
    lambda_min,
    log_det,
    solve_lower_t,
    symmetric,
    widths,
)


def spd(d: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((3 * d, d))
    return np.asfortranarray(np.eye(d) + x.T @ x)


def test_clipping() -> None:
    arms = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    np.testing.assert_allclose(clip_arms(arms), [[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]])
    table = np.stack([arms, 2 * arms])
    np.testing.assert_allclose(clip_table(table)[1], [[0.6, 0.8], [0.6, 0.8], [0, 0]])
    assert clip_reward(1.7) == 1.0 and clip_reward(-0.2) == 0.0 and clip_reward(0.4) == 0.4


def test_linear_algebra_helpers_match_dense_formulas() -> None:
    a = spd(6)
    lower = np.tril(a)  # only the lower triangle is read
    factor = cholesky(np.asfortranarray(lower))
    inv = np.linalg.inv(a)
    b = np.arange(6.0)
    np.testing.assert_allclose(cho_solve(factor, b), inv @ b, rtol=1e-10)
    x = np.random.default_rng(1).standard_normal((4, 6))
    np.testing.assert_allclose(widths(factor, x), np.sqrt(np.einsum("ij,jk,ik->i", x, inv, x)))
    assert log_det(factor) == pytest.approx(np.linalg.slogdet(a)[1])
    assert lambda_min(np.asfortranarray(lower)) == pytest.approx(np.linalg.eigvalsh(a)[0])
    np.testing.assert_array_equal(symmetric(lower), a)
    with pytest.raises(np.linalg.LinAlgError):
        cholesky(np.asfortranarray(-np.eye(3)))


def test_ts_draws_have_covariance_a_inverse() -> None:
    """ξ = L⁻ᵀz, z ~ N(0, I): covariance A⁻¹ (entrywise within 5 s.e.)."""
    a = spd(4, seed=3) / 10
    factor = cholesky(a)
    n = 40_000
    z = np.random.default_rng(5).standard_normal((4, n))
    xi = solve_lower_t(factor, z)
    cov = np.cov(xi)
    target = np.linalg.inv(a)
    se = np.sqrt((target**2 + np.outer(np.diag(target), np.diag(target))) / n)
    assert np.all(np.abs(cov - target) < 5 * se)


def test_gram_updates_and_warm_start() -> None:
    info = ProblemInfo("logistic", 3, 2, 10, 1.0)
    pol = make_policy("LinUCB", info, np.random.default_rng(0), lam=2.0, theta0=[1.0, 0, -1])
    np.testing.assert_allclose(pol.b, [2.0, 0, -2.0])
    xs = np.random.default_rng(2).standard_normal((5, 3))
    clipped = pol.prepare_arms(xs)  # the runner prepares (clips) arms before select/update
    for t, x in enumerate(clipped):
        pol.update(t, x, 0.5)
    np.testing.assert_array_equal(clipped, clip_arms(xs))
    np.testing.assert_allclose(pol.gram, 2 * np.eye(3) + clipped.T @ clipped)
    np.testing.assert_allclose(pol.b, [2.0, 0, -2.0] + 0.5 * clipped.sum(axis=0))


class _Env(RoundEnvironment):
    def __init__(self, theta0) -> None:
        self.info = ProblemInfo("linear", 2, 2, 3, 1.0)
        self.theta0 = theta0

    def arms(self, t: int) -> np.ndarray:
        return np.array([[1.0, 0.0], [0.0, 1.0]])

    def pull(self, t: int, index: int) -> tuple[float, float]:
        return 0.0, 0.0


def test_warm_start_from_environment() -> None:
    info = _Env(None).info
    pol = make_policy("LinTS", info, np.random.default_rng(0), theta0="environment")
    pol.run(_Env(np.array([0.5, -0.5])))
    assert pol.theta0.tolist() == [0.5, -0.5]
    with pytest.raises(ConfigError, match="no theta0"):
        make_policy("LinTS", info, np.random.default_rng(0), theta0="environment").run(_Env(None))
    for bad in ([1.0], "prior", [np.nan, 0.0]):
        with pytest.raises(ConfigError, match="theta0"):
            make_policy("LinTS", info, np.random.default_rng(0), theta0=bad)


def test_accepts_any_reward_family() -> None:
    for family in ("logistic", "linear", "replay", "movielens"):
        make_policy("LinTS", ProblemInfo(family, 2, 2, 3, 1.0), np.random.default_rng(0))


class _RaggedEnv(RoundEnvironment):
    """Arm sets of varying size, rewards outside [0, 1], features outside the unit ball."""

    def __init__(self, horizon: int = 60) -> None:
        self.info = ProblemInfo("replay", 3, 6, horizon, 1.0)
        g = np.random.default_rng(0)
        self.sets = [2.0 * g.standard_normal((2 + t % 5, 3)) for t in range(horizon)]
        self.pulled: list[np.ndarray] = []

    def arms(self, t: int) -> np.ndarray:
        return self.sets[t]

    def pull(self, t: int, index: int) -> tuple[float, float]:
        self.pulled.append(self.sets[t][index])
        return (1.7 if t % 2 else -0.3), 0.0


@pytest.mark.parametrize("name", ["LinUCB", "LinTS", "AdaPrivate-TS", "AdaPrivate-TS-Amp",
                                  "AdaPrivate-TS-Adaptive", "AdaPrivate-UCB", "JDP-LinUCB",
                                  "zCDP-Episodic", "AdaC-OFUL-zCDP", "RarelySwitching-zCDP",
                                  "DGS-LinUCB"])
def test_any_environment(name: str) -> None:
    env = _RaggedEnv()
    private = {"epsilon": 2.0, "delta": 1e-5, "accounting": "paper"} if name not in (
        "LinUCB", "LinTS") else {}
    extra = {"B": 7} if name.startswith("AdaPrivate") else {}
    pol = make_policy(name, env.info, np.random.default_rng(0), **private, **extra)
    result = pol.run(env)
    assert result.regret.shape == (60,)
    if name in ("LinUCB", "LinTS"):
        x = clip_arms(np.asarray(env.pulled))
        np.testing.assert_allclose(pol.gram, np.eye(3) + x.T @ x, atol=1e-12)
        rewards = np.where(np.arange(60) % 2 == 1, 1.0, 0.0)  # clipped to [0, 1]
        np.testing.assert_allclose(pol.b, rewards @ x, atol=1e-12)
