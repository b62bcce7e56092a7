import numpy as np
import pytest

from dpbandits.errors import ConfigError
from dpbandits.instances.glm import GLMInstance, ball_draws, draw_theta_and_contexts
from dpbandits.instances.registry import build_instance

# Reference values (seed 109832, full_norm); κ, κ* and Σ_t max μ as in docs/glm.md,
# "Non-linearity constants".
REFERENCE = [
    (
        "probit",
        3,
        2.0,
        5000,
        [0.2954160447, 1.8265908424, 0.7591411298],
        18.3936699115,
        2.5066282747,
        4647.707511,
    ),
    (
        "probit",
        3,
        2.5,
        5000,
        [0.3692700559, 2.2832385530, 0.9489264122],
        56.4360057458,
        2.5066282747,
        4822.318224,
    ),
    (
        "probit",
        3,
        3.0,
        5000,
        [0.4431240670, 2.7398862636, 1.1387116946],
        222.1475133947,
        2.5066282748,
        4913.682661,
    ),
    (
        "logistic",
        5,
        3.5,
        15000,
        [0.3361164170, 2.0782458511, 0.8637303258, 0.2915890795, -2.6432679905],
        33.7624543080,
        4.0000000000,
        13554.368419,
    ),
    (
        "probit",
        5,
        3.0,
        5000,
        [0.2880997860, 1.7813535867, 0.7403402792, 0.2499334967, -2.2656582776],
        193.1841005125,
        2.5066282746,
        4837.224535,
    ),
]


@pytest.mark.parametrize("family,d,S,T,theta,kappa,kappa_star,sum_best", REFERENCE)
def test_table2_and_figure1_instances_match_reference(
    family, d, S, T, theta, kappa, kappa_star, sum_best
):
    inst = GLMInstance(family=family, d=d, K=20, S=S, horizon=T, seed=109832)
    np.testing.assert_allclose(inst.theta, theta, rtol=1e-8)
    assert inst.kappa == pytest.approx(kappa, rel=1e-8)
    assert inst.kappa_star == pytest.approx(kappa_star, rel=1e-8)
    assert inst.best.sum() == pytest.approx(sum_best, rel=1e-8)


def test_spot_check_arms():
    _, ctx = draw_theta_and_contexts(109832, 3, 20, 2.0, 5000)
    np.testing.assert_allclose(ctx[0, 0], [0.8041721732, 0.1608432948, -0.4146261193], rtol=1e-8)
    np.testing.assert_allclose(
        ctx[4999, 19], [-0.1574910408, 0.7390265319, -0.3199574833], rtol=1e-8
    )
    _, ctx5 = draw_theta_and_contexts(109832, 5, 20, 3.0, 10)
    np.testing.assert_allclose(
        ctx5[0, 0],
        [-0.2135248186, 0.0499388500, -0.0783747227, 0.2737251591, -0.7707885037],
        rtol=1e-8,
    )


def test_vectorised_arm_draw_would_not_match():
    g = np.random.default_rng(109832)
    g.uniform(-1, 1, size=3)
    v = g.normal(0, 1, size=(1, 3))
    x = g.uniform(0, 1) ** (1 / 3) * v[0] / np.linalg.norm(v[0])
    _, ctx = draw_theta_and_contexts(109832, 3, 20, 2.0, 1)
    assert np.allclose(x, ctx[0, 0])
    g = np.random.default_rng(109832)
    g.uniform(-1, 1, size=3)
    normals = g.normal(0, 1, size=(20, 3))
    assert not np.allclose(
        normals[1] / np.linalg.norm(normals[1]), ctx[0, 1] / np.linalg.norm(ctx[0, 1])
    )


def arm_by_arm(seed: int, d: int, K: int, S: float, horizon: int, full_norm: bool = True):
    """The instance drawn one arm at a time in Python, as the authors' loop does."""
    g = np.random.default_rng(seed)
    u = g.uniform(-1.0, 1.0, size=d)
    scale = S if full_norm else S * g.uniform(0.0, 1.0)
    contexts = np.empty((horizon, K, d))
    for t in range(horizon):
        for i in range(K):
            v = g.normal(0.0, 1.0, size=d)
            contexts[t, i] = g.uniform(0.0, 1.0) ** (1.0 / d) * v / np.sqrt(v @ v)
    return scale * u / np.linalg.norm(u), contexts


@pytest.mark.parametrize("seed,d,K,S,T,full_norm", [
    (109832, 3, 20, 2.0, 400, True), (109832, 5, 20, 3.5, 300, True), (7, 20, 5, 1.0, 200, True),
    (3, 2, 10, 1.0, 300, False), (5, 1, 4, 1.0, 50, True),
])
def test_the_draws_are_bitwise_the_arm_by_arm_draws(seed, d, K, S, T, full_norm):
    theta, contexts = draw_theta_and_contexts(seed, d, K, S, T, full_norm)
    ref_theta, ref_contexts = arm_by_arm(seed, d, K, S, T, full_norm)
    assert np.array_equal(theta, ref_theta) and np.array_equal(contexts, ref_contexts)
    # Negative control: a different seed's table is not equal.
    assert not np.array_equal(contexts, arm_by_arm(seed + 1, d, K, S, T, full_norm)[1])


def test_ball_draws_advance_the_generator_as_numpy_does():
    """The kernel draws from the generator it is given: each arm's d normals, then its
    uniform, and the generator's next draw is the one numpy would make after the same calls."""
    g, ref = np.random.default_rng(42), np.random.default_rng(42)
    normals, radii = np.empty((30, 4)), np.empty(30)
    ball_draws(g, normals, radii, 0.25)
    for arm in range(30):
        assert np.array_equal(normals[arm], ref.normal(0.0, 1.0, size=4))
        assert radii[arm] == ref.uniform(0.0, 1.0) ** 0.25
    assert g.random() == ref.random()
    assert g.bit_generator.state == ref.bit_generator.state


def test_contexts_in_unit_ball_and_theta_norm():
    inst = GLMInstance(family="logistic", d=4, K=7, S=1.5, horizon=200, seed=3)
    assert np.all(np.linalg.norm(inst.contexts, axis=2) <= 1 + 1e-12)
    assert np.linalg.norm(inst.theta) == pytest.approx(1.5)


def test_common_random_numbers_across_environments():
    inst = GLMInstance(family="probit", d=3, K=5, S=2.0, horizon=100, seed=1)
    a, b = inst.environment(4), inst.environment(4)
    assert np.array_equal(a.rewards, b.rewards)
    assert not np.array_equal(a.rewards, inst.environment(5).rewards)
    for t in (0, 50, 99):
        for i in range(5):
            assert a.pull(t, i) == b.pull(t, i)


@pytest.mark.parametrize("family", ["probit", "logistic"])
def test_reward_mean_matches_link(family):
    inst = GLMInstance(family=family, d=2, K=3, S=1.0, horizon=20, seed=0)
    draws = np.stack([inst.reward_table(trial) for trial in range(4000)])
    mean = draws.mean(axis=0)
    se = np.sqrt(inst.means * (1 - inst.means) / draws.shape[0])
    assert np.all(np.abs(mean - inst.means) < 4.5 * se + 1e-12)


def test_regret_is_non_negative_and_zero_for_best_arm():
    inst = GLMInstance(family="logistic", d=3, K=6, S=2.0, horizon=50, seed=2)
    env = inst.environment(0)
    for t in range(50):
        best = int(np.argmax(inst.means[t]))
        assert env.pull(t, best)[1] == 0.0
        assert all(env.pull(t, i)[1] >= 0 for i in range(6))


@pytest.mark.parametrize(
    "key,value", [("S", 0.0), ("S", -1.0), ("d", 0), ("K", 0), ("horizon", 0), ("S", float("nan"))]
)
def test_bad_instance_parameters(key, value):
    params = dict(generator="glm_ball", family="probit", d=3, K=4, S=1.0, horizon=10, seed=0)
    params[key] = value
    with pytest.raises(ConfigError, match=key):
        build_instance(params)


def test_unknown_family_and_generator():
    with pytest.raises(ConfigError, match="family = 'poisson' is not allowed; must be logistic"):
        build_instance(
            dict(generator="glm_ball", family="poisson", d=2, K=2, S=1.0, horizon=5, seed=0)
        )
    with pytest.raises(ConfigError, match="unknown instance generator 'nope'"):
        build_instance({"generator": "nope"})


@pytest.mark.parametrize("family", ["logistic", "probit", "linear"])
def test_outcome_tables_are_what_pull_gives(family: str) -> None:
    instance = build_instance({"generator": "glm_ball", "family": family, "d": 3, "K": 4,
                               "S": 2.0, "horizon": 200, "seed": 5})
    env = instance.environment(1)
    rewards, regrets = env.outcome_tables()
    assert rewards.dtype == regrets.dtype == np.float64 and rewards.shape == (200, 4)
    for t in range(200):
        for i in range(4):
            assert env.pull(t, i) == (rewards[t, i], regrets[t, i])
