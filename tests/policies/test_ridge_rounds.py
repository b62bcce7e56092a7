"""Table rounds of the ridge policies (`_ridge`, docs/architecture.md "Table rounds"): the same
bits as the select → pull → update loop, for every policy that plays tables."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dpbandits import runner
from dpbandits.instances.registry import build_instance
from dpbandits.linalg import cholesky, log_det, solve_lower_t, widths
from dpbandits.policies import _ridge, get_policy_class, make_policy
from dpbandits.policies.linear_ts import LinTS
from dpbandits.policies.ridge_rounds import MEAN_EVERY_ROUND, TS, UCB

CASES: list[tuple[str, dict[str, Any]]] = [
    ("LinTS", {}),
    ("LinTS", {"v": 0.5, "lam": 2.0}),
    ("LinUCB", {}),
    ("LinUCB", {"alpha": 2.0, "theta0": "environment"}),
    ("AdaPrivate-TS", {"B": 7}),
    ("AdaPrivate-TS", {"v": 1.5, "B": 50, "conversion": "tight"}),
    ("AdaPrivate-TS", {"mean_gram": "current", "B": 13}),
    ("AdaPrivate-TS-Amp", {"B": 11}),
    ("AdaPrivate-TS-Amp", {"B": 11, "amp_rescale": False}),
    ("AdaPrivate-TS-Adaptive", {"B": 9}),
    ("AdaPrivate-TS-Adaptive", {"B": 9, "v0": "tuned"}),
    ("AdaPrivate-UCB", {"B": 10}),
    ("AdaPrivate-UCB", {"alpha": 0.5, "B": 33, "group_size": 2}),
    ("AdaPrivate-UCB", {"mean_gram": "current", "alpha": 1.0}),
    ("zCDP-Episodic", {}),
    ("zCDP-Episodic", {"c_trigger": 1.0, "alpha": 0.5}),
    ("zCDP-Episodic", {"c_trigger": 4.0, "conversion": "tight"}),
    ("RarelySwitching-zCDP", {}),
    ("RarelySwitching-zCDP", {"alpha": 2.0, "C": 0.2}),
    ("AdaC-OFUL-zCDP", {"alpha": 0.1}),
    ("AdaC-OFUL-zCDP", {"C": 3.0, "lam": 0.5}),
]
POOLS = [  # (d, K) with K = 1 and d = 1 at the edges
    {"generator": "logistic_pool", "d": 3, "n_arms": 10, "K": 4, "seed": 5},
    {"generator": "logistic_pool", "d": 20, "n_arms": 30, "K": 5, "seed": 6},
    {"generator": "logistic_pool", "d": 1, "n_arms": 3, "K": 1, "seed": 7},
    {"generator": "logistic_pool", "d": 6, "n_arms": 9, "K": 2, "seed": 8, "link": "linear"},
]
GLM = {"generator": "glm_ball", "family": "logistic", "d": 4, "K": 6, "S": 2.0, "seed": 3}


def play(name: str, params: dict[str, Any], spec: dict[str, Any], trial: int, accounting: str,
         tables: bool) -> dict[str, Any]:
    """One run by the table rounds or by select → pull → update: everything it leaves."""
    instance = build_instance(spec)
    env = instance.environment(trial)
    if params.get("theta0") == "environment":
        env.theta0 = np.linspace(-0.5, 0.5, instance.info.d)
    policy = make_policy(name, instance.info, np.random.default_rng([trial, 17]), epsilon=0.8,
                         delta=1e-5, accounting=accounting, **params)
    policy.begin(env)
    if tables:
        assert runner.outcome_tables(policy, env) is not None
        regret, reward = runner._round_loop(policy, env)
    else:
        regret, reward = runner._select_update_loop(policy, env)
    policy.finish()
    return {"regret": regret, "reward": reward, "A": policy.A, "b": policy.b,
            "events": policy.events(), "diagnostics": policy.diagnostics(),
            "ledger": policy.ledger.to_json() if policy.ledger is not None else None,
            "spent": policy.ledger.spent() if policy.ledger is not None else None,
            "normals": (policy.explore_normals.i, policy.explore_normals.table.copy()),
            "noise_state": policy.noise_rng.bit_generator.state}


def assert_same_bits(a: dict[str, Any], b: dict[str, Any]) -> None:
    for key in ("regret", "reward", "A", "b"):
        assert a[key].tobytes() == b[key].tobytes(), key
    assert a["events"].keys() == b["events"].keys()
    for key in a["events"]:
        assert a["events"][key].tobytes() == b["events"][key].tobytes(), key
    assert repr(a["diagnostics"]) == repr(b["diagnostics"])
    assert repr(a["ledger"]) == repr(b["ledger"]) and repr(a["spent"]) == repr(b["spent"])
    assert a["normals"][0] == b["normals"][0]
    assert a["normals"][1].tobytes() == b["normals"][1].tobytes()
    assert a["noise_state"] == b["noise_state"]


@pytest.mark.parametrize("spec", POOLS, ids=lambda s: f"d{s['d']}K{s['K']}")
@pytest.mark.parametrize("name,params", CASES, ids=lambda c: str(c))
@pytest.mark.parametrize("accounting", ["strict", "paper"])
def test_table_rounds_give_the_round_loops_bits(name: str, params: dict[str, Any],
                                                spec: dict[str, Any], accounting: str) -> None:
    spec = {**spec, "horizon": 400}
    for trial in (0, 1):
        assert_same_bits(play(name, params, spec, trial, accounting, tables=True),
                         play(name, params, spec, trial, accounting, tables=False))


@pytest.mark.parametrize("name,params", [CASES[0], CASES[2], CASES[4], CASES[11]],
                         ids=lambda c: str(c))
def test_table_rounds_on_a_glm_environment(name: str, params: dict[str, Any]) -> None:
    spec = {**GLM, "horizon": 300}
    assert_same_bits(play(name, params, spec, 2, "strict", tables=True),
                     play(name, params, spec, 2, "strict", tables=False))


@pytest.mark.parametrize("name", ["LinTS", "AdaPrivate-TS"])
def test_table_rounds_across_blocks_of_exploration_normals(name: str) -> None:
    """T > 10,000: the normals come in two blocks, the second drawn when the first runs out."""
    spec = {"generator": "logistic_pool", "d": 2, "n_arms": 4, "K": 3, "seed": 9,
            "horizon": 10_037}
    a = play(name, {"B": 100} if name != "LinTS" else {}, spec, 0, "strict", tables=True)
    b = play(name, {"B": 100} if name != "LinTS" else {}, spec, 0, "strict", tables=False)
    assert a["normals"][0] == 37
    assert_same_bits(a, b)


def test_every_policy_that_plays_tables_is_covered_here() -> None:
    from dpbandits.policies import POLICIES

    playing = {name for name in POLICIES.names() if runner.plays_tables(get_policy_class(name))}
    assert playing == {name for name, _ in CASES}


def test_a_subclass_plays_round_by_round_unless_it_declares_tables() -> None:
    """`plays_tables` is not inherited: a LinTS that chooses otherwise is asked every round."""
    asked: list[int] = []

    class FirstArmTS(LinTS):
        def choose(self, t: int, arms: np.ndarray) -> int:
            asked.append(t)
            return 0

    instance = build_instance({**POOLS[0], "horizon": 50})
    env = instance.environment(0)
    policy = FirstArmTS(instance.info, np.random.default_rng(0))
    policy.begin(env)
    assert runner.plays_tables(LinTS) and not runner.plays_tables(FirstArmTS)
    runner._round_loop(policy, env)
    assert asked == list(range(50))


def test_the_round_loop_is_used_without_outcome_tables() -> None:
    """An environment without outcome tables is played round by round, with the same bits."""
    spec = {**POOLS[0], "horizon": 120}
    instance = build_instance(spec)
    env = instance.environment(0)
    env.outcome_tables = lambda: None  # type: ignore[method-assign]
    policy = make_policy("LinTS", instance.info, np.random.default_rng([0, 17]))
    policy.begin(env)
    assert runner.outcome_tables(policy, env) is None
    regret, _ = runner._round_loop(policy, env)
    assert regret.tobytes() == play("LinTS", {}, spec, 0, "strict", True)["regret"].tobytes()


def test_a_failed_factorisation_raises_numpys_error_in_both_loops() -> None:
    instance = build_instance({**POOLS[0], "horizon": 20})
    for tables in (True, False):
        env = instance.environment(0)
        policy = make_policy("LinUCB", instance.info, np.random.default_rng(0))
        policy.begin(env)
        policy.A[:] = -np.eye(instance.info.d, order="F")
        loop = runner._round_loop if tables else runner._select_update_loop
        with pytest.raises(np.linalg.LinAlgError, match=r"Cholesky failed \(info = 1\)"):
            loop(policy, env)


@pytest.mark.parametrize("d,K", [(20, 5), (7, 3), (1, 4), (33, 1), (5, 40)])
def test_round_scores_are_the_python_policies_bits(d: int, K: int) -> None:
    """TS: `arms @ (v·L⁻ᵀz + θ̂)`; UCB: `ucb_index`'s α·widths + arms @ θ̂. Scores, not only the
    chosen arm: a last-bit difference seldom changes an argmax in a short test run."""
    rng = np.random.default_rng([d, K])
    for _ in range(300):
        g = rng.standard_normal((d + 3, d))
        factor = cholesky(np.asfortranarray(g.T @ g + rng.uniform(0.1, 3) * np.eye(d)))
        arms = rng.standard_normal((K, d)) * rng.uniform(0.1, 5)
        theta, z = rng.standard_normal(d), rng.standard_normal(d)
        scale = float(rng.choice([1.0, rng.uniform(0.05, 3)]))
        sample = solve_lower_t(factor, z)
        if scale != 1.0:
            sample *= scale
        sample += theta
        assert (_ridge.scores(TS, factor, arms, theta, scale, z).tobytes()
                == (arms @ sample).tobytes())
        ucb = widths(factor, arms)
        if scale != 1.0:
            ucb *= scale
        ucb += arms @ theta
        assert _ridge.scores(UCB, factor, arms, theta, scale, None).tobytes() == ucb.tobytes()


@pytest.mark.parametrize("d", [1, 2, 7, 8, 9, 20, 33, 130])
def test_log_det_is_the_python_policies_bits(d: int) -> None:
    """`2 Σ ln L_ii` by numpy's log and its add reduction: sums of 8 and more add pairwise."""
    rng = np.random.default_rng(d)
    for _ in range(200):
        g = rng.standard_normal((d + 2, d)) * np.exp(rng.uniform(-3, 3, d))
        factor = cholesky(np.asfortranarray(g.T @ g + rng.uniform(0.01, 2) * np.eye(d)))
        assert repr(_ridge.log_det(factor)) == repr(log_det(factor))


def _arguments(d: int = 3, K: int = 2, T: int = 4) -> list[Any]:
    return [np.asfortranarray(np.eye(d)), np.zeros(d), np.zeros(d), np.zeros((T, K, d)),
            np.zeros((T, K)), np.zeros((T, K)), np.empty(T), np.empty(T), 0, T, UCB, 1.0,
            None, 0, MEAN_EVERY_ROUND, None, None, 0, 0, T]


@pytest.mark.parametrize("position,value,message", [
    (0, np.eye(3), "a is not allowed"),  # C order
    (1, np.zeros(4), "b is not allowed"),
    (3, np.zeros((4, 2, 3), dtype=np.float32), "arms is not allowed"),
    (4, np.zeros((4, 3)), "rewards is not allowed"),
    (6, np.empty(3), "regret_out is not allowed"),
    (10, 2, "action = 2 is not allowed"),
    (12, np.zeros((5, 2)), "normals is not allowed"),
    (14, 3, "mean_rule = 3 is not allowed"),
    (9, 5, r"rounds \[0, 5\) are not allowed"),
])
def test_run_refuses_bad_arguments_with_one_line(position: int, value: Any,
                                                 message: str) -> None:
    args = _arguments()
    if position == 12:
        args[10] = TS
    args[position] = value
    with pytest.raises((ValueError, TypeError), match=message) as caught:
        _ridge.run(*args)
    assert "\n" not in str(caught.value)


def test_run_with_good_arguments_plays_the_rounds() -> None:
    """The control of the refusals above: the same arguments, unchanged, play all 4 rounds."""
    assert _ridge.run(*_arguments())[0] == 4


def _switching_arguments(d: int = 3, K: int = 2, T: int = 4) -> list[Any]:
    eye = np.asfortranarray(np.eye(d))
    return [eye.copy(order="F"), np.zeros(d), np.zeros(d), eye, np.zeros((T, K, d)),
            np.zeros((T, K)), np.zeros((T, K)), np.empty(T), np.empty(T), 0, T, 1.0, 0, 0.0,
            0.0, 0.0, 0.69, 1.0]


def _episodic_arguments(d: int = 3, K: int = 2, T: int = 4) -> list[Any]:
    eye = np.asfortranarray(np.eye(d))
    return [eye.copy(order="F"), eye.copy(order="F"), np.zeros(d), np.zeros(d),
            np.zeros((T, K, d)), np.zeros((T, K)), np.zeros((T, K)), np.empty(T), np.empty(T),
            0, T, 1.0, 0, 0.0, 0.69]


@pytest.mark.parametrize("position,value,message", [
    (3, np.eye(3), "factor_tau is not allowed"),  # C order
    (1, np.zeros(2), "s is not allowed"),
    (7, np.empty(5), "regret_out is not allowed"),
    (10, 5, r"rounds \[0, 5\) are not allowed"),
])
def test_run_switching_refuses_bad_arguments_with_one_line(position: int, value: Any,
                                                           message: str) -> None:
    args = _switching_arguments()
    args[position] = value
    with pytest.raises(ValueError, match=message) as caught:
        _ridge.run_switching(*args)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("position,value,message", [
    (1, np.eye(2, order="F"), "a_episode is not allowed"),
    (2, np.zeros(4), "b_episode is not allowed"),
    (4, np.zeros((4, 2, 3), order="F"), "arms is not allowed"),
])
def test_run_episodic_refuses_bad_arguments_with_one_line(position: int, value: Any,
                                                          message: str) -> None:
    args = _episodic_arguments()
    args[position] = value
    with pytest.raises(ValueError, match=message) as caught:
        _ridge.run_episodic(*args)
    assert "\n" not in str(caught.value)


def test_switching_and_episodic_runs_with_good_arguments_play_the_rounds() -> None:
    """The controls of the refusals above: the unchanged arguments play all 4 rounds."""
    assert _ridge.run_switching(*_switching_arguments())[0] == 4
    assert _ridge.run_episodic(*_episodic_arguments())[0] == 4
