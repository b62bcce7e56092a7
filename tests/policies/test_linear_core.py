"""Shared linear-policy machinery: clipping, Cholesky-based draws and widths, warm start."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits import linalg
from dpbandits.contract import ProblemInfo, RoundEnvironment
from dpbandits.errors import ConfigError
from dpbandits.instances.registry import build_instance
from dpbandits.policies import make_policy
from dpbandits.policies.linear_core import (
    BLOCK_MAX,
    NoiseRows,
    exact_grid,
    greedy_index,
    inflate_exact,
    inflate_integers,
    noisy_into,
    snap,
    snapped_release,
    ucb_index,
)
from dpbandits.privacy import _exact
from dpbandits.privacy.clipping import clip_arms
from dpbandits.privacy.exact_noise import (
    ExactNoise,
    NumpyNoise,
    discrete_gaussian,
    inflate_for_snapping,
)


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


def test_snap_is_exact_noise_snap_coordinatewise() -> None:
    """`snap` and `noisy_into` give `ExactNoise.snap(v, σ) + γ·z` bit for bit, huge and
    non-finite coordinates included, and v + σ·z for continuous noise."""
    g = np.random.default_rng(8)
    exact = ExactNoise(np.random.default_rng(0))
    values = np.concatenate([g.standard_normal(50) * 10.0 ** g.integers(-3, 14, 50),
                             [1e300, -1e300, np.inf, -np.inf, np.nan, 0.0, -0.0, 2.5, -3.5]])
    for sigma in (0.013, 1.0545, 490.1, 3.1e7):
        gamma, s = exact_grid(exact, sigma)
        assert gamma == exact.grid(sigma) and s * gamma == exact.effective_sigma(sigma)
        expected = exact.snap(values, sigma)
        with np.errstate(invalid="ignore"):
            got = np.array([snap(v, gamma) for v in values])
            assert got.tobytes() == expected.tobytes()
            z = g.integers(-5000, 5000, values.shape).astype(float)
            out = np.empty_like(values)
            noisy_into(values, gamma, gamma, z, out)
            assert out.tobytes() == (expected + gamma * z).tobytes()
    z = g.standard_normal(values.shape)
    out = np.empty_like(values)
    noisy_into(values, 2.5, 0.0, z, out)
    with np.errstate(invalid="ignore"):
        assert out.tobytes() == (values + 2.5 * z).tobytes()


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


def test_inflate_exact_is_inflate_for_snapping() -> None:
    """Integer cross-multiplication gives the σ′ of the Fraction loop, bit for bit."""
    g = np.random.default_rng(4)
    exact = ExactNoise(np.random.default_rng(0))
    cases = [(490.3, 1.0, 20), (4.9, 1.0, 20), (1.0, 1.0, 1), (2.0**14, 2.0, 21), (3.0, 0.5, 5)]
    for _ in range(2000):
        sensitivity = float(np.exp(g.uniform(-12, 6)))
        ratio = float(np.exp(g.uniform(-2, 9)))
        cases.append((sensitivity * ratio, sensitivity, int(g.integers(1, 500))))
    for sigma, sensitivity, dim in cases:
        assert (inflate_exact(exact, sigma, sensitivity, dim)
                == inflate_for_snapping(exact, sigma, sensitivity, dim))
    for bad in ((2.0**20, 2.0, 21), (0.0, 1.0, 3), (1.0, 0.0, 3)):  # no σ′ exists / invalid
        with pytest.raises(Exception) as fast:
            inflate_exact(exact, *bad)
        with pytest.raises(Exception) as slow:
            inflate_for_snapping(exact, *bad)
        assert fast.type is slow.type
    paper = NumpyNoise(np.random.default_rng(0))
    assert inflate_exact(paper, 3.5, 1.0, 20) == inflate_for_snapping(paper, 3.5, 1.0, 20)


def _calibration_cases(g: np.random.Generator, n: int) -> list[tuple[float, float, int]]:
    """σ = Δ·ratio over wide ranges, σ on or one step off its grid, and DGS-LinUCB's σ for
    Δ = 1/λ_min."""
    exact = ExactNoise(np.random.default_rng(0))
    cases = []
    for i in range(n):
        sensitivity = float(np.exp(g.uniform(-12, 6)))
        sigma = sensitivity * float(np.exp(g.uniform(-2, 9)))
        if i % 3 == 1:
            sigma = float(np.nextafter(exact.effective_sigma(sigma), g.choice([0, np.inf])))
        elif i % 3 == 2:
            sensitivity = float(np.exp(-g.uniform(0, 7)))
            sigma = sensitivity * float(np.exp(g.uniform(0, 9)))
        cases.append((sigma, sensitivity, int(g.integers(1, 3000))))
    return cases


def test_compiled_inflation_is_the_integer_one() -> None:
    """`_exact.inflate` gives the σ′ of the integer test, bit for bit, and declines only where
    its binary arithmetic stops (then the integer test answers or raises)."""
    exact = ExactNoise(np.random.default_rng(0))
    g = np.random.default_rng(11)
    moved = 0
    for sigma, sensitivity, dim in _calibration_cases(g, 6000):
        compiled = _exact.inflate(sigma, sensitivity, dim)
        assert compiled is not None
        assert compiled == inflate_integers(exact, sigma, sensitivity, dim)
        moved += compiled != exact.effective_sigma(sigma)
    assert moved > 5000  # the first candidate fails: the rounded quotient is what is compared
    # outside the grid's range, exponents too far apart, no σ′ reached, a dim other than an
    # int in [1, 2^53): declined, and `inflate_exact` answers or raises as the Fraction loop
    declined = [(2.0**1001, 1.0, 5), (1.0, 2.0**-1020, 5), (2.0**-300, 2.0**300, 5),
                (2.0**20, 2.0, 21), (3.5, 1.0, 20.0), (3.5, 1.0, np.float64(20)),
                (3.5, 1.0, 2**53), (3.5, 1.0, 2**63), (3.5, 1.0, 0)]
    for sigma, sensitivity, dim in declined:
        assert _exact.inflate(sigma, sensitivity, dim) is None
        try:
            want: float | type = inflate_for_snapping(exact, sigma, sensitivity, dim)
        except (ValueError, ZeroDivisionError) as error:
            want = type(error)
        try:
            got: float | type = inflate_exact(exact, sigma, sensitivity, dim)
        except (ValueError, ZeroDivisionError) as error:
            got = type(error)
        assert got == want
    # far from the usual ranges: σ/Δ = 2^-120, a dim of 2^30
    for sigma, sensitivity, dim in ((2.0**-120, 1.0, 7), (2.0**-90 * 1.3, 3.0, 20),
                                    (4.9, 1.0, 2**30), (1e3, 3.0, 2**10)):
        compiled = _exact.inflate(sigma, sensitivity, dim)
        assert compiled is not None
        assert compiled == inflate_integers(exact, sigma, sensitivity, dim)
    # the negative control: one step of the grid off is seen
    sigma, sensitivity, dim = 490.3, 1.0, 20
    value = inflate_integers(exact, sigma, sensitivity, dim)
    assert _exact.inflate(sigma, sensitivity, dim) != value + exact.grid(value)


def test_snapped_release_is_snap_plus_discrete_noise() -> None:
    """Same stream, same numbers as `noise.snap(v, σ) + noise.gaussian(σ, shape)`."""
    g = np.random.default_rng(5)
    values = [g.standard_normal(20) * 1e3, np.array([1e300, -2.5, 0.0]), np.array(7.25),
              np.array([np.nan, 1.0]), g.standard_normal((3, 4)), np.zeros(0)]
    for sigma in (0.013, 1.0545, 490.1, 3.1e7):
        for value in values:
            fast, ref = ExactNoise(np.random.default_rng(9)), ExactNoise(np.random.default_rng(9))
            with np.errstate(over="ignore", invalid="ignore"):
                expected = ref.snap(value, sigma) + ref.gaussian(sigma, np.shape(value))
                got = snapped_release(fast, value, sigma)
            assert got.tobytes() == expected.tobytes()
            assert fast.rng.random() == ref.rng.random()  # the streams moved alike


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
