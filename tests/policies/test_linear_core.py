"""Shared linear-policy machinery: clipping, Cholesky-based draws and widths, warm start."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits.contract import ProblemInfo, RoundEnvironment
from dpbandits.errors import ConfigError
from dpbandits.policies import make_policy
from dpbandits.privacy.clipping import clip_arms


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
