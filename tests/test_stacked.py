"""The compiled kernels on stacks of small matrices (`_stacked.c`) against the numpy calls they
stand for: the same bits, and the same decisions, including where a decision is close."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from dpbandits import _stacked, links, small_linalg
from dpbandits.errors import ConfigError
from dpbandits.links import expit, get_link
from dpbandits.policies.private_glm import gen_eig_max_white, inverse_norms, whitening
from dpbandits.policies.private_glm_lockstep import PrivateGLMLockstep
from dpbandits.policies.shuffle_glm import ShuffleGLM
from dpbandits.privacy.tree import clipped_eigh, gershgorin_short, symmetrised_shifted


def parts(rng: np.random.Generator, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """A data stack and a cover stack sliced from a table, as `StackedTrees` passes them."""
    data = rng.standard_normal((n, d, d)) * rng.choice([1e-3, 1.0, 1e3])
    data = data + np.swapaxes(data, 1, 2)
    table = rng.standard_normal((n, 4, d, d))
    return data, table[:, 2]


@pytest.mark.parametrize("d", [1, 2, 5, 20])
def test_release_is_numpys_release_and_gershgorin_test(d: int) -> None:
    rng = np.random.default_rng(d)
    settled = 0
    for _ in range(200):
        data, cover = parts(rng, int(rng.integers(1, 12)), d)
        shift, floor = float(rng.uniform(0, 30)), float(rng.choice([1e-12, 0.5, 5.0]))
        raw, short = _stacked.release(data, cover, shift, floor)
        expected = symmetrised_shifted(data + cover, shift)
        assert raw.tobytes() == expected.tobytes()
        if short is not None:
            settled += 1
            assert short.tolist() == gershgorin_short(expected, floor).tolist()
    assert settled > 150


def test_a_disc_on_the_floor_is_left_to_numpy() -> None:
    """Centre − radius equal to the floor: too close for the compiled test, which says None;
    a floor far below or above it settles."""
    data = np.array([[[3.0, 1.0], [1.0, 3.0]]])
    cover = np.zeros_like(data)
    assert _stacked.release(data, cover, 0.0, 2.0)[1] is None
    assert _stacked.release(data, cover, 0.0, 1.0)[1].tolist() == [False]
    assert _stacked.release(data, cover, 0.0, 3.0)[1].tolist() == [True]


@pytest.mark.parametrize("d", [1, 3, 5, 20])
def test_release_eigh_is_numpys(d: int) -> None:
    rng = np.random.default_rng(100 + d)
    for _ in range(100):
        data, cover = parts(rng, int(rng.integers(1, 12)), d)
        shift, floor = float(rng.uniform(0, 30)), float(rng.choice([1e-12, 0.5, 40.0]))
        vals, vecs = _stacked.release_eigh(data, cover, shift, floor)
        expected = clipped_eigh(symmetrised_shifted(data + cover, shift), floor)
        assert vals.tobytes() == expected[0].tobytes()
        assert vecs.tobytes() == expected[1].tobytes()


def test_release_eigh_leaves_non_finite_releases_to_numpy() -> None:
    data = np.eye(3)[None].repeat(2, axis=0)
    data[1, 0, 1] = np.nan
    assert _stacked.release_eigh(data, np.zeros_like(data), 1.0, 1e-12) is None
    data[1, 0, 1] = np.inf
    assert _stacked.release_eigh(data, np.zeros_like(data), 1.0, 1e-12) is None


def whitened_pairs(rng: np.random.Generator, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """H and W = whitening of a positive definite H_prev, H near H_prev (Criterion II's case)."""
    g = rng.standard_normal((n, d, d))
    prev = g @ np.swapaxes(g, 1, 2) + d * np.eye(d)
    noise = rng.standard_normal((n, d, d)) * rng.uniform(0.0, 0.5)
    h = prev + noise @ np.swapaxes(noise, 1, 2)
    vals, vecs = np.linalg.eigh(prev)
    return h, whitening(vals, vecs)


@pytest.mark.parametrize("d", [1, 2, 5, 20])
def test_above_is_numpys_decision(d: int) -> None:
    """Thresholds far from, near and at the largest eigenvalue numpy computes; one ulp above
    it flips numpy's decision, and the kernel's with it (negative control)."""
    rng = np.random.default_rng(200 + d)
    flips = 0
    for _ in range(150):
        h, w = whitened_pairs(rng, int(rng.integers(1, 12)), d)
        top = gen_eig_max_white(h, w)
        for threshold in (1.0 + 5.0 / (8.0 * math.sqrt(d)) + 0.05, float(top[0]),
                          math.nextafter(float(top[0]), -math.inf), float(np.median(top)),
                          0.5, 1e6):
            expected = np.atleast_1d(top > threshold)
            assert _stacked.above(h, w, threshold).tolist() == expected.tolist()
        at, below = (_stacked.above(h, w, x)[0] for x in (float(top[0]),
                                                          math.nextafter(float(top[0]), 0.0)))
        flips += bool(below) and not at
    assert flips == 150


def test_above_leaves_non_finite_eigenvalues_to_numpy() -> None:
    h, w = whitened_pairs(np.random.default_rng(3), 3, 4)
    h[2, 1, 1] = np.nan
    assert _stacked.above(h, w, 1.3) is None
    h[2, 1, 1] = np.inf
    assert _stacked.above(h, w, 1.3) is None


@pytest.mark.parametrize("kernel", ["release", "release_eigh", "above"])
@pytest.mark.parametrize("case", ["fortran matrices", "int", "other n", "other d", "2-d"])
def test_kernels_refuse_other_arrays(kernel: str, case: str) -> None:
    a, b = np.ones((3, 2, 2)), np.ones((3, 2, 2))
    if case == "fortran matrices":
        b = np.asfortranarray(np.arange(12.0).reshape(3, 2, 2)).transpose(0, 2, 1)
        b = np.asfortranarray(b)
    elif case == "int":
        b = b.astype(np.int64)
    elif case == "other n":
        b = b[:2].copy()
    elif case == "other d":
        b = np.ones((3, 3, 3))
    else:
        a = np.ones((2, 2))
    call = {"release": lambda: _stacked.release(a, b, 0.0, 1.0),
            "release_eigh": lambda: _stacked.release_eigh(a, b, 0.0, 1.0),
            "above": lambda: _stacked.above(a, b, 1.0)}[kernel]
    with pytest.raises(ValueError, match="not allowed"):
        call()


def elimination_state(rng: np.random.Generator, batches: int, d: int) -> ShuffleGLM:
    """A Shuffle-GLM's elimination state, random: batch estimates θ̂_j, V_j's eigen-pairs,
    γ, κ and the power of κ in the first width."""
    policy = object.__new__(ShuffleGLM)
    g = rng.standard_normal((batches, d, d))
    vals, vecs = np.linalg.eigh(g @ np.swapaxes(g, 1, 2) + np.eye(d))
    policy.theta = list(rng.standard_normal((batches, d)))
    policy.gram_eig = list(zip(vals, vecs, strict=True))
    policy.gamma, policy.kappa = rng.uniform(0.0, 3.0), rng.uniform(1.0, 20.0)
    policy.elim_power = rng.choice([0.0, 0.5, 1.0])
    return policy


@pytest.mark.parametrize("d", [1, 3, 9, 20])
def test_survivors_are_numpys(d: int) -> None:
    """The arms kept, on random rounds of 1 to 30 arms and 1 to 6 estimates; most rounds keep
    some arms and drop others, so the comparison is not between full sets."""
    rng = np.random.default_rng(300 + d)
    partial = 0
    for _ in range(300):
        policy = elimination_state(rng, int(rng.integers(1, 7)), d)
        arms = rng.standard_normal((int(rng.integers(1, 31)), d)) / math.sqrt(d)
        kept = _stacked.survivors(arms, *policy.estimate_stacks())
        assert kept.dtype == np.intp
        assert kept.tolist() == policy.numpy_survivors(arms).tolist()
        partial += 0 < len(kept) < len(arms)
    assert partial > 100


def test_survivors_follow_the_policys_own_elimination() -> None:
    """Through a Shuffle-GLM run's own state: the compiled and the numpy elimination keep the
    same arms, and give the same weights and design points, in every round of a batch."""
    from dpbandits.instances.glm import GLMInstance
    from dpbandits.policies import make_policy

    inst = GLMInstance("logistic", 3, 10, 2.0, 3000, 5)
    policy = make_policy("Shuffle-GLM", inst.info, np.random.default_rng(1), epsilon=8.0,
                         delta=0.02, accounting="paper", c_b=1.0, log_arg="practical")
    env = inst.environment(0)
    policy.begin(env)
    rounds = 0
    for t in range(inst.horizon):
        arms = env.arms(t)
        if policy.batch > 0:
            assert policy._survivors(arms).tolist() == policy.numpy_survivors(arms).tolist()
            assert same_points(policy._points(arms), policy.numpy_points(arms))
            rounds += 1
        arm = policy.select(t, arms)
        policy.update(t, arms[arm], env.pull(t, arm)[0])
    assert rounds > 1000


def test_survivors_leave_an_emptied_round_to_numpy() -> None:
    """A NaN estimate eliminates every arm; with an estimate left, numpy's max of nothing
    raises, so the kernel says None."""
    policy = elimination_state(np.random.default_rng(4), 2, 3)
    policy.theta[0][0] = np.nan
    arms = np.eye(3)
    assert _stacked.survivors(arms, *policy.estimate_stacks()) is None
    with pytest.raises(ValueError):
        policy.numpy_survivors(arms)
    policy.theta, policy.gram_eig = policy.theta[:1], policy.gram_eig[:1]
    assert _stacked.survivors(arms, *policy.estimate_stacks()).tolist() == []


def eigen_stack(rng: np.random.Generator, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """n random positive definite d × d matrices as `small_linalg.eigh` gives them."""
    g = rng.standard_normal((n, d, d))
    return small_linalg.eigh(g @ np.swapaxes(g, 1, 2) + 0.1 * np.eye(d))


@pytest.mark.parametrize("d", [1, 2, 5, 9])
def test_inverse_norms_are_numpys(d: int) -> None:
    rng = np.random.default_rng(500 + d)
    for _ in range(100):
        vals, vecs = eigen_stack(rng, int(rng.integers(1, 12)), d)
        arms = rng.standard_normal((int(rng.integers(1, 30)), d)) / 2.0
        expected = inverse_norms(arms, vals, vecs)
        assert _stacked.inverse_norms(arms, vals, vecs).tobytes() == expected.tobytes()


def ucb_state(rng: np.random.Generator, n: int, d: int) -> PrivateGLMLockstep:
    """What Private-GLM's lockstep UCB reads, random: H_prev's and V's eigen-pairs, the centres,
    θ_w (zero, so not eliminating, in some trials), β and the width scale."""
    driver = object.__new__(PrivateGLMLockstep)
    driver.hp_vals, driver.hp_vecs = eigen_stack(rng, n, d)
    driver.v_vals, driver.v_vecs = eigen_stack(rng, n, d)
    driver.centre = rng.standard_normal((n, d))
    driver.theta_w = rng.standard_normal((n, d)) * (rng.random((n, 1)) < 0.7)
    driver.eliminating = driver.theta_w.any(axis=1)
    driver.beta, driver.width_scale = rng.uniform(0.0, 3.0), rng.uniform(0.0, 3.0)
    return driver


@pytest.mark.parametrize("d", [1, 3, 5])
def test_ucb_is_numpys(d: int) -> None:
    """The UCB actions of every trial or of a mask of them, with and without elimination; the
    actions without any elimination differ in many rounds (negative control)."""
    rng = np.random.default_rng(600 + d)
    differ = 0
    for _ in range(300):
        n = int(rng.integers(1, 12))
        driver = ucb_state(rng, n, d)
        arms = rng.standard_normal((int(rng.integers(1, 30)), d)) / 2.0
        cold = None if rng.random() < 0.3 else rng.random(n) < 0.6
        found = driver._ucb(arms, cold)
        assert found.dtype == np.intp
        assert found.tolist() == driver.numpy_ucb(arms, cold).tolist()
        driver.eliminating = np.zeros(n, dtype=bool)
        differ += found.tolist() != driver.numpy_ucb(arms, cold).tolist()
    assert differ > 50


def test_ucb_follows_numpys_nans() -> None:
    """NaN scores: numpy's argmax picks the first NaN, and a NaN elimination keeps no arm."""
    driver = ucb_state(np.random.default_rng(7), 3, 2)
    arms = np.array([[0.5, 0.1], [0.2, 0.3], [0.1, -0.4]])
    driver.centre[0, 0] = np.nan
    driver.theta_w[1, 1] = np.nan
    driver.eliminating = driver.theta_w.any(axis=1)
    assert driver._ucb(arms, None).tolist() == driver.numpy_ucb(arms, None).tolist()


def weighting_state(rng: np.random.Generator, batches: int, d: int, link: str) -> ShuffleGLM:
    """`elimination_state` with what Shuffle-GLM's weights read: the link, R, S, the power of
    κ in β(x) and whether the points scale by √w. γ up to 30 puts some widths above 2S, where
    the cap decides."""
    policy = elimination_state(rng, batches, d)
    policy.gamma = rng.uniform(0.0, 30.0)
    policy.link = get_link(link)
    policy.problem = SimpleNamespace(S=rng.uniform(0.5, 3.0), R=rng.uniform(0.5, 2.0))
    policy.beta_power = rng.choice([0.0, 0.5, 1.0])
    policy.scale_sqrt = bool(rng.integers(2))
    policy._estimates = (None, None, None, ())
    return policy


def same_points(found: tuple, expected: tuple) -> bool:
    return (found[0].tolist() == expected[0].tolist()
            and all(a.tobytes() == b.tobytes() for a, b in zip(found[1:], expected[1:],
                                                               strict=True)))


@pytest.mark.parametrize("link", ["logistic", "probit", "linear"])
@pytest.mark.parametrize("d", [1, 3, 9])
def test_shuffle_points_are_numpys(link: str, d: int) -> None:
    """Survivors, weights and design points bit for bit on random rounds, capped widths
    included; a one-ulp change of R changes the weights compared (negative control)."""
    rng = np.random.default_rng(400 + d)
    capped = differ = 0
    for _ in range(300):
        policy = weighting_state(rng, int(rng.integers(1, 5)), d, link)
        arms = rng.standard_normal((int(rng.integers(1, 31)), d)) / math.sqrt(d)
        found = policy._points(arms)
        assert same_points(found, policy.numpy_points(arms))
        vals, vecs = policy.gram_eig[0]
        norm = np.sqrt(((arms[found[0]] @ vecs) ** 2 / vals).sum(axis=1))
        capped += bool((policy.gamma * policy.kappa**policy.beta_power * norm
                        > 2.0 * policy.problem.S).any())
        policy.problem.R = np.nextafter(policy.problem.R, 10.0)
        differ += not same_points(found, policy.numpy_points(arms))
    assert capped > 50
    assert differ > 50


def test_shuffle_points_leave_an_emptied_round_to_numpy() -> None:
    policy = weighting_state(np.random.default_rng(4), 2, 3, "logistic")
    policy.theta[0][0] = np.nan
    assert _stacked.shuffle_points(np.eye(3), *policy.estimate_stacks(), 1.0, 1.0, 1.0, 0,
                                   expit, True) is None
    with pytest.raises(ValueError):
        policy.numpy_points(np.eye(3))


def test_an_emptied_round_raises_as_numpys_design_does() -> None:
    """No arm left after elimination: the draw is left to numpy's design, which refuses an
    empty action set."""
    policy = weighting_state(np.random.default_rng(4), 1, 3, "logistic")
    policy.rng, policy.design_tol = np.random.default_rng(0), 0.01
    with pytest.raises(ConfigError, match="actions shape"):
        policy._design_choice(np.empty((0, 3)))


def test_shuffle_points_with_a_wrapped_expit_are_numpys(monkeypatch) -> None:
    """The logistic μ̇ from a Python wrapper of scipy's expit: the kernel is not asked."""
    ufunc = links.expit
    monkeypatch.setattr(links, "expit", lambda z: ufunc(z))
    monkeypatch.setattr(_stacked, "shuffle_points", None)  # a call would raise TypeError
    policy = weighting_state(np.random.default_rng(6), 2, 3, "logistic")
    arms = np.random.default_rng(7).standard_normal((8, 3)) / 2.0
    assert same_points(policy._points(arms), policy.numpy_points(arms))


def test_shuffle_points_refuse_another_link() -> None:
    policy = weighting_state(np.random.default_rng(4), 2, 3, "logistic")
    with pytest.raises(ValueError, match="link = 3 is not allowed"):
        _stacked.shuffle_points(np.eye(3), *policy.estimate_stacks(), 1.0, 1.0, 1.0, 3,
                                expit, True)
    with pytest.raises(RuntimeError, match="not a numpy ufunc"):
        _stacked.shuffle_points(np.eye(3), *policy.estimate_stacks(), 1.0, 1.0, 1.0, 0,
                                len, True)


def test_releases_leave_edge_cases_to_numpy() -> None:
    """A NaN floor, and rows whose absolute sum nears the largest double (numpy's own order
    of summation may overflow there), leave the Gershgorin test to numpy; a floor of -0.0
    clips as numpy's maximum does (its signed zeros)."""
    data = np.array([[[3.0, 1.0], [1.0, 3.0]]])
    zeros = np.zeros_like(data)
    assert _stacked.release(data, zeros, 0.0, math.nan)[1] is None
    huge = np.full((1, 6, 6), 2.5e307)  # row sums 1.5e308: finite in any order here
    assert _stacked.release(huge, np.zeros_like(huge), 0.0, 1.0)[1] is None
    flat = np.zeros((1, 3, 3))
    vals, vecs = _stacked.release_eigh(flat, np.zeros_like(flat), 0.0, -0.0)
    expected = clipped_eigh(symmetrised_shifted(flat, 0.0), -0.0)
    assert vals.tobytes() == expected[0].tobytes() and vecs.tobytes() == expected[1].tobytes()


def test_survivors_follow_replaced_estimates() -> None:
    """Estimates replaced by new lists of the same length (as tests and tools may set them)
    are stacked afresh: the compiled elimination keeps numpy's arms every time."""
    rng = np.random.default_rng(5)
    policy = elimination_state(rng, 3, 4)
    policy._estimates = (None, None, None, ())
    for _ in range(50):
        fresh = elimination_state(rng, 3, 4)
        policy.theta, policy.gram_eig = fresh.theta, fresh.gram_eig
        arms = rng.standard_normal((12, 4)) / 2.0
        assert policy._survivors(arms).tolist() == policy.numpy_survivors(arms).tolist()
