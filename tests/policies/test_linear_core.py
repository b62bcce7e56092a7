"""Shared linear-policy machinery: clipping, Cholesky-based draws and widths, warm start."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits import linalg
from dpbandits.contract import ProblemInfo, RoundEnvironment
from dpbandits.errors import ConfigError
from dpbandits.instances.registry import build_instance
from dpbandits.policies import make_policy
from dpbandits.policies.linear_core import BLOCK_MAX, NoiseRows, greedy_index, ucb_index
from dpbandits.privacy.clipping import clip_arms
from dpbandits.privacy.exact_noise import ExactNoise, NumpyNoise, discrete_gaussian


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


def test_ucb_index_is_the_argmax_of_the_scores() -> None:
    """`ucb_index` skips the multiplication by 1 and adds in place: the same argmax."""
    g = np.random.default_rng(3)
    for _ in range(200):
        d = int(g.integers(1, 25))
        x = clip_arms(g.standard_normal((int(g.integers(1, 400)), d)))
        factor = linalg.cholesky(np.asfortranarray(g.uniform(0.05, 3.0) * np.eye(d) + x.T @ x))
        arms, v = g.standard_normal((int(g.integers(1, 9)), d)), g.standard_normal(d)
        for scale in (0.0, 0.5, 1.0, 2.0):
            scores = arms @ v + scale * linalg.widths(factor, arms)
            assert ucb_index(arms, v, factor, scale) == int(scores.argmax())


def test_argmax_kernels_pick_the_first_of_equal_scores() -> None:
    factor = linalg.cholesky(np.eye(2))
    arms = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0], [0.5, 0.5]])
    theta = np.array([1.0, 1.0])
    assert greedy_index(arms, theta) == 0
    assert ucb_index(arms, theta, factor, 0.0) == 0
    assert greedy_index(arms, np.array([2.0, 1.0])) == 1
    assert ucb_index(arms[1:], theta, factor, 1.0) == 0


@pytest.mark.parametrize("exact", [True, False])
def test_noise_rows_are_the_generators_draws_in_order(exact: bool) -> None:
    """Rows of one scale come in doubling blocks, row by row the generator's own draws; a
    new scale draws anew from where the generator stands (the old block's rest unused)."""
    d = 3
    noise = (ExactNoise if exact else NumpyNoise)(np.random.default_rng(4))
    rows = NoiseRows(noise, d)
    twin = np.random.default_rng(4)

    def draw(s: int, n: int) -> np.ndarray:
        if s == 0:
            return twin.standard_normal((n, d))
        return discrete_gaussian(twin, s, (n, d)).astype(float)

    s1, s2 = (1_500_000, 1_100_000) if exact else (0, 0)
    taken = [rows.take(s1) for _ in range(6)]  # blocks of 1, 2, 4 rows
    assert len(rows.rows) == 4 and rows.cursor[0] == 3
    np.testing.assert_array_equal(taken, draw(s1, 6))
    if exact:
        row = rows.take(s2)  # one row of the 4 unused, then a block of 1 for s2
        draw(s1, 1)
        np.testing.assert_array_equal(row, draw(s2, 1)[0])
        assert len(rows.rows) == 1
    for _ in range(5000):
        rows.take(s2)
    assert len(rows.rows) == BLOCK_MAX


class _PoolTable(RoundEnvironment):
    """A pool trial seen through `arms`/`pull` only (no table: the policy prepares each round)."""

    def __init__(self, env: RoundEnvironment) -> None:
        self.env, self.info = env, env.info

    def arms(self, t: int) -> np.ndarray:
        return self.env.arms(t).copy()

    def pull(self, t: int, index: int) -> tuple[float, float]:
        return self.env.pull(t, index)


@pytest.mark.parametrize("accounting", ["strict", "paper"])
@pytest.mark.parametrize("name", ["LinUCB", "LinTS", "AdaPrivate-TS", "AdaPrivate-UCB",
                                  "AdaPrivate-TS-Amp", "AdaPrivate-TS-Adaptive",
                                  "RarelySwitching-zCDP", "AdaC-OFUL-zCDP", "zCDP-Episodic",
                                  "DGS-LinUCB", "JDP-LinUCB"])
def test_table_and_round_by_round_play_agree_bit_for_bit(name: str, accounting: str) -> None:
    """A pre-drawn table (compiled rounds) and per-round arms (select → pull → update) give
    the same trace, events and ledger."""
    inst = build_instance({"generator": "logistic_pool", "seed": 12, "horizon": 1500})
    private = ({"epsilon": 1.0, "delta": 1e-5, "accounting": accounting}
               if name not in ("LinUCB", "LinTS") else {})
    runs = []
    for env in (inst.environment(0), _PoolTable(inst.environment(0))):
        pol = make_policy(name, inst.info, np.random.default_rng(1), **private)
        result = pol.run(env)
        ledger = pol.ledger.to_json() if pol.ledger is not None else ""
        runs.append((result.regret.tobytes(), result.reward.tobytes(), ledger,
                     {k: v.tobytes() for k, v in result.events.items()}))
    assert runs[0] == runs[1]
