"""JDP-LinUCB: calibration constants, tree noise, ε = ∞ limit (docs/ts.md, "JDP-LinUCB")."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy.linalg import lapack

from dpbandits import runner
from dpbandits.contract import ProblemInfo
from dpbandits.errors import ConfigError
from dpbandits.instances.registry import build_instance
from dpbandits.policies import make_policy
from dpbandits.policies.jdp_linucb import JDPLinUCB, jdp_shift, jdp_sigma
from dpbandits.privacy.tree import MatrixTree

DELTA = 1e-5


def test_constants_at_paper_scale() -> None:
    assert jdp_sigma(1.0, DELTA, 10_000) == pytest.approx(399.67, abs=0.01)
    s1 = jdp_sigma(1.0, DELTA, 10_000)
    assert jdp_shift(s1, 20, 10_000, 0.05) == pytest.approx(95_634, abs=1)
    assert jdp_shift(jdp_sigma(5.0, DELTA, 10_000), 20, 10_000, 0.05) == pytest.approx(19_127,
                                                                                        abs=1)
    assert jdp_shift(s1, 50, 10_000, 0.05) == pytest.approx(118_391, abs=1)
    info = ProblemInfo("logistic", 20, 5, 10_000, 2.0)
    pol = make_policy("JDP-LinUCB", info, np.random.default_rng(0), epsilon=1.0, delta=DELTA)
    assert pol.tree.height == 15


def test_released_noise_is_the_trees_and_v_is_positive_definite() -> None:
    inst = build_instance({"generator": "logistic_pool", "seed": 8, "horizon": 300})
    env = inst.environment(0)
    pol = make_policy("JDP-LinUCB", inst.info, np.random.default_rng(0), epsilon=1.0,
                      delta=DELTA)
    played, rewards = [], []
    for t in range(300):
        arms = env.arms(t)
        i = pol.select(t, arms)
        r = env.pull(t, i)[0]
        pol.update(t, arms[i], r)
        played.append(arms[i])
        rewards.append(r)
        if t % 37 == 0:
            # the tree only counts leaves here, so its release is its noise plus the shift
            raw = pol.tree.query_raw() - 2 * pol.upsilon * np.eye(21)
            np.testing.assert_allclose(pol.tree_noise, raw, atol=1e-6)
            prefix = np.zeros((21, 21))
            for x, r in zip(played, rewards, strict=True):
                z = np.append(x, r)
                prefix += pol.tree.snap(np.outer(z, z))  # on the noise grid in strict mode
            np.testing.assert_allclose(pol.released_sum - pol.tree_noise, prefix, atol=1e-6)
            np.testing.assert_array_equal(pol.tree_noise, pol.tree_noise.T)
    assert pol.tree.count == 300 and len(pol.cover) == bin(300).count("1")
    assert pol.diagnostics()["floor_events"] == 0
    v, _ = pol.released()
    assert np.linalg.eigvalsh(v)[0] > 0


def test_node_noise_variance_per_entry() -> None:
    """Off-diagonal variance popcount(c)·σ_n², diagonal twice that (c = 7: three nodes)."""
    info = ProblemInfo("linear", 2, 1, 8, 1.0)
    n = 2000
    off, diag = np.empty(n), np.empty(n)
    x = np.array([0.6, 0.8])
    for rep in range(n):
        pol = JDPLinUCB(info, np.random.default_rng(rep), epsilon=50.0, delta=0.1)
        for t in range(7):
            pol.update(t, x, 1.0)
        off[rep], diag[rep] = pol.tree_noise[0, 1], pol.tree_noise[1, 1]
    s2 = pol.sigma_n**2
    assert off.var() / (3 * s2) == pytest.approx(1.0, abs=5 * math.sqrt(2 / n))
    assert diag.var() / (6 * s2) == pytest.approx(1.0, abs=5 * math.sqrt(2 / n))


def test_infinite_epsilon_limit_is_linucb() -> None:
    inst = build_instance({"generator": "logistic_pool", "seed": 9, "horizon": 250})
    env = inst.environment(0)
    pol = make_policy("JDP-LinUCB", inst.info, np.random.default_rng(0), epsilon=1.0,
                      delta=DELTA, alpha=0.5)
    pol.sigma_n, pol.upsilon = 0.0, 0.0
    pol.reset()
    ref = make_policy("LinUCB", inst.info, np.random.default_rng(0), alpha=0.5)
    for t in range(250):
        arms = env.arms(t)
        i, j = pol.select(t, arms), ref.select(t, arms)
        assert i == j
        r = env.pull(t, i)[0]
        pol.update(t, arms[i], r)
        ref.update(t, arms[j], r)


def test_release_is_factorised_once_and_floors_are_counted_per_query() -> None:
    """Asking twice in one round (a replay) reuses the round's factor; a floored V_t is
    counted on every query, as when it was refactorised each time."""

    class NoShift(JDPLinUCB):
        def calibrate(self) -> None:
            super().calibrate()
            self.upsilon = 0.0

    inst = build_instance({"generator": "logistic_pool", "seed": 8, "horizon": 60})
    env = inst.environment(0)
    pol = NoShift(inst.info, np.random.default_rng(0), epsilon=1.0, delta=DELTA)
    pol.begin(env)
    expected = 0
    for t in range(60):
        v, _ = pol.released()
        expected += 2 * (lapack.dpotrf(v, lower=1, clean=0)[1] != 0)
        arms = env.arms(t)
        i = pol.select(t, arms)
        assert pol.select(t, arms) == i
        pol.update(t, arms[i], env.pull(t, i)[0])
    assert expected > 0 and pol.floor_events == expected


@pytest.mark.parametrize("epsilon", [1e300, 1e-300])
def test_an_epsilon_whose_noise_scale_overflows_is_one_clear_error(epsilon: float) -> None:
    info = build_instance({"generator": "logistic_pool", "d": 3, "n_arms": 5, "K": 2,
                           "horizon": 50, "seed": 1}).info
    message = re.escape(f"epsilon = {epsilon!r} is not allowed")
    with pytest.raises(ConfigError, match=message) as caught:
        make_policy("JDP-LinUCB", info, np.random.default_rng(0), epsilon=epsilon, delta=1e-5)
    assert "\n" not in str(caught.value)
    make_policy("JDP-LinUCB", info, np.random.default_rng(0), epsilon=1e100, delta=1e-5)


def _played(spec: dict, tables: bool, change=None, eager: bool | None = None,
            accounting: str = "strict") -> tuple[tuple, int]:
    """A begun JDP-LinUCB run by its table rounds or by select → pull → update (after
    `change(policy)`): its trace, ledger and state, and how many rounds `choose` played."""
    instance = build_instance(spec)
    env = instance.environment(0)
    policy = make_policy("JDP-LinUCB", instance.info, np.random.default_rng(3), epsilon=0.8,
                         delta=1e-5, accounting=accounting)
    policy.begin(env)
    if eager is not None:
        policy.tree = MatrixTree(policy.horizon, policy.d + 1, policy.tree.sigma_node,
                                 policy.noise_rng, shift=policy.tree.shift, noise=policy.noise,
                                 eager=eager)
    if change is not None:
        change(policy)
    chosen = []
    choose = policy.choose
    policy.choose = lambda t, arms: (chosen.append(t), choose(t, arms))[1]  # type: ignore
    loop = runner._round_loop if tables else runner._select_update_loop
    regret, reward, actions = loop(policy, env)
    policy.finish()
    return ((regret.tobytes(), actions.tolist(), policy.ledger.to_json(),
             policy.prefix.tobytes(), policy.tree_noise.tobytes(), policy.tree.count,
             policy.floor_events, policy.noise_rng.bit_generator.state["state"],
             policy.tree.node_noise(1 << (policy.tree.height - 1)).tobytes()),
            len(chosen))


def _no_shift(policy: JDPLinUCB) -> None:
    """V_t = tree noise alone: often not positive definite, so the policy floors it."""
    policy.base = 1e-9 * np.eye(policy.d)


SMALL = {"generator": "logistic_pool", "d": 4, "n_arms": 12, "K": 3, "seed": 6,
         "horizon": 600}


@pytest.mark.parametrize("accounting", ["strict", "paper"])
@pytest.mark.parametrize("eager", [True, False])
@pytest.mark.parametrize("change", [None, _no_shift])
def test_table_rounds_are_the_round_loops(accounting: str, eager: bool, change) -> None:
    """Blocks of node noises drawn ahead (eager and lazy trees), rounds whose V_t is floored
    played by `choose`: the trace, ledger, release and generator of select → pull → update."""
    tables, asked = _played(SMALL, True, change, eager, accounting)
    rounds, _ = _played(SMALL, False, change, eager, accounting)
    assert tables == rounds
    if change is None:
        assert asked == 0 and tables[6] == 0  # every round compiled, nothing floored
    else:
        assert 0 < asked < SMALL["horizon"] and tables[6] == asked


def test_a_draw_between_blocks_would_change_the_noise() -> None:
    """Negative control: a lazy tree's node noises are its generator's next draws."""
    base, _ = _played(SMALL, True, eager=False)
    moved, _ = _played(SMALL, True, change=lambda p: p.noise_rng.random(), eager=False)
    assert base[8] != moved[8]  # the first node's noise
