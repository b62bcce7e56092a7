"""Table rounds of the ridge policies (`_ridge`, docs/architecture.md "Table rounds") and of
RS-GLinUCB, GLOC and ECOLog (`_glm_rounds`): the same bits as the select → pull → update loop,
for every policy that plays tables."""

from __future__ import annotations

import dataclasses
import faulthandler
import signal
import threading
import tracemalloc
from typing import Any

import numpy as np
import pytest

from dpbandits import links, runner
from dpbandits.contract import OutcomeTables, ProblemInfo, RoundEnvironment
from dpbandits.glm import GrowingNewton
from dpbandits.instances.glm import GLMEnvironment
from dpbandits.instances.registry import build_instance
from dpbandits.linalg import cholesky, log_det, solve_lower_t, widths
from dpbandits.policies import (
    POLICIES,
    _glm_rounds,
    _ridge,
    get_policy_class,
    jdp_linucb,
    make_policy,
)
from dpbandits.policies import (
    ecolog as ecolog_module,
)
from dpbandits.policies.linear_ts import LinTS
from dpbandits.policies.ridge_rounds import MEAN_EVERY_ROUND, TS, UCB, finish_round
from dpbandits.privacy import tree as tree_module
from dpbandits.privacy.ledger import PrivacyLedger
from dpbandits.scipy_kernels import blas, lapack

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
    ("JDP-LinUCB", {}),
    ("JDP-LinUCB", {"alpha": 2.0, "lam": 0.5, "theta0": "environment"}),
    ("DGS-LinUCB", {}),
    ("DGS-LinUCB", {"alpha": 0.5, "lam": 2.0, "conversion": "tight"}),
]
GLM_CASES: list[tuple[str, dict[str, Any]]] = [  # the GLM baselines' table rounds (`_glm_rounds`)
    ("RS-GLinUCB", {}),
    ("RS-GLinUCB", {"variant": "C"}),
    ("RS-GLinUCB", {"variant": "SW"}),  # its determinant switch: every round through `select`
    ("RS-GLinUCB", {"variant": "paper"}),
    ("RS-GLinUCB", {"variant": "C", "running_max_logdet": True}),
    ("RS-GLinUCB", {"solver": "newton", "strict_switch": True, "ucb_centre": "tau"}),
    ("RS-GLinUCB", {"h_prev_init_zero": True, "h_divide_e": False, "c_dbl": 0.1}),
    ("GLOC", {}),
    ("GLOC", {"lam0": 0.5}),
    ("GLOC", {"paper_faithful": True}),  # its V-norm projection: every round through `select`
    ("GLM-UCB", {}),  # linear: `numpy_newton`'s fits, every round through `select`
    ("GLM-UCB", {"sqrt_log_t_for_all": True, "lam0": 0.5}),
    ("GLM-UCB", {"newton_cap": 0.3}),  # fits capped onto the ball: the minimiser in Python
    ("GLM-UCB", {"do_projection": True}),  # its projection: every round through `select`
]
POOLS = [  # (d, K) with K = 1 and d = 1 at the edges
    {"generator": "logistic_pool", "d": 3, "n_arms": 10, "K": 4, "seed": 5},
    {"generator": "logistic_pool", "d": 20, "n_arms": 30, "K": 5, "seed": 6},
    {"generator": "logistic_pool", "d": 1, "n_arms": 3, "K": 1, "seed": 7},
    {"generator": "logistic_pool", "d": 6, "n_arms": 9, "K": 2, "seed": 8, "link": "linear"},
]
GLM = {"generator": "glm_ball", "family": "logistic", "d": 4, "K": 6, "S": 2.0, "seed": 3}
# linear rewards with noise: far outside [0, 1], so every clip of a reward is exercised
ECOLOG_CASES: list[tuple[dict[str, Any], dict[str, Any]]] = [  # (parameters, instance)
    ({}, GLM),  # no projection
    ({"lam0": 0.5}, GLM),  # rounds whose steps project, which `select` and `update` make
    ({"lam0": 0.05, "ell_projection": "bounded"}, GLM),
    ({"lam0": 0.05}, {**GLM, "d": 2, "S": 5.0}),  # σ̇(xᵀθ̄) > 2σ̇(xᵀθ) in some rounds
]
GLM_NOISY = {"generator": "glm_ball", "family": "linear", "d": 4, "K": 6, "S": 2.0, "seed": 3,
             "noise_sd": 3.0}
# remembered per version of A or of the tree release, recomputed when asked, and calibrations
# and episode estimates remembered by their arguments; and the scratch of JDP-LinUCB and
# DGS-LinUCB, written in full before each read
CACHES = {"_factor", "_mean", "_calibrated", "episode_memo", "current", "v_work", "z", "leaf",
          "theta_work"}


def snapshot(value: Any, depth: int = 0) -> Any:
    """A comparable image of a value: arrays by dtype, shape and bytes, floats by repr."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, float | np.generic):
        return ("number", repr(value))
    if value is None or isinstance(value, int | str | bool):
        return value
    if isinstance(value, np.random.Generator):
        return ("generator", repr(value.bit_generator.state))
    if isinstance(value, PrivacyLedger):
        return ("ledger", value.to_json(), repr(value.spent()))
    if isinstance(value, list | tuple):
        return tuple(snapshot(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return tuple((repr(k), snapshot(v, depth + 1)) for k, v in value.items())
    if depth < 2 and hasattr(value, "__dict__"):
        return (type(value).__name__, snapshot(vars(value), depth + 1))
    return ("object", type(value).__name__)


def filled(data: GrowingNewton) -> dict[str, Any]:
    """A fit's data as far as it is written: its rows, the numpy fit's columns and the last
    solution (the rest of its preallocated arrays is never read)."""
    n, known = data.n, data._filled
    return {"n": n, "X": data.X[:n], "r": data.r[:n], "columns": data._columns[:, :known],
            "theta": data._theta, "known": data._known}


def played(policy: Any, env: Any, tables: bool) -> dict[str, Any]:
    """One begun run by the table rounds or by select → pull → update: everything it leaves,
    every attribute of the policy included."""
    if tables:
        assert runner.outcome_tables(policy, env) is not None
        regret, reward, actions = runner._round_loop(policy, env)
    else:
        regret, reward, actions = runner._select_update_loop(policy, env)
    policy.finish()
    state = {k: filled(v) if isinstance(v, GrowingNewton) else v
             for k, v in vars(policy).items() if k not in CACHES}
    return {"regret": snapshot(regret), "reward": snapshot(reward), "actions": actions.tolist(),
            "events": snapshot(policy.events()), "diagnostics": snapshot(policy.diagnostics()),
            "state": snapshot(state)}


def play(name: str, params: dict[str, Any], spec: dict[str, Any], trial: int, accounting: str,
         tables: bool) -> dict[str, Any]:
    """`played` on a fresh instance environment and policy."""
    instance = build_instance(spec)
    env = instance.environment(trial)
    if params.get("theta0") == "environment":
        env.theta0 = np.linspace(-0.5, 0.5, instance.info.d)
    policy = make_policy(name, instance.info, np.random.default_rng([trial, 17]), epsilon=0.8,
                         delta=1e-5, accounting=accounting, **params)
    policy.begin(env)
    return played(policy, env, tables)


def assert_same_bits(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert a[key] == b[key], key


@pytest.mark.parametrize("spec", POOLS, ids=lambda s: f"d{s['d']}K{s['K']}")
@pytest.mark.parametrize("name,params", CASES, ids=lambda c: str(c))
@pytest.mark.parametrize("accounting", ["strict", "paper"])
def test_table_rounds_give_the_round_loops_bits(name: str, params: dict[str, Any],
                                                spec: dict[str, Any], accounting: str) -> None:
    spec = {**spec, "horizon": 400}
    for trial in (0, 1):
        assert_same_bits(play(name, params, spec, trial, accounting, tables=True),
                         play(name, params, spec, trial, accounting, tables=False))


@pytest.mark.parametrize("name,params", CASES, ids=lambda c: str(c))
def test_table_rounds_clip_rewards_outside_the_unit_interval(name: str,
                                                              params: dict[str, Any]) -> None:
    spec = {**GLM_NOISY, "horizon": 300}
    assert_same_bits(play(name, params, spec, 2, "strict", tables=True),
                     play(name, params, spec, 2, "strict", tables=False))


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
    params = {"B": 100} if name != "LinTS" else {}
    a = play(name, params, spec, 0, "strict", tables=True)
    assert_same_bits(a, play(name, params, spec, 0, "strict", tables=False))


@pytest.mark.parametrize("accounting", ["strict", "paper"])
def test_dgs_rounds_across_blocks_of_noise_normals(accounting: str) -> None:
    """T > 10,000: numpy noise takes its normals in two blocks (exact noise none)."""
    spec = {"generator": "logistic_pool", "d": 2, "n_arms": 4, "K": 3, "seed": 9,
            "horizon": 10_037}
    a = play("DGS-LinUCB", {}, spec, 0, accounting, tables=True)
    assert_same_bits(a, play("DGS-LinUCB", {}, spec, 0, accounting, tables=False))


@pytest.mark.parametrize("theta0,python_rounds", [(6e11, "some"), (None, "none")])
def test_dgs_rounds_leave_to_the_policy_a_release_beyond_the_snap_limit(
        theta0: float | None, python_rounds: str) -> None:
    """A warm start of ±6·10^11 puts θ̂ near 2^53·γ: the releases beyond it take
    `snapped_release`'s other path, in the policy's `choose`; the rest stay compiled."""
    spec = {**POOLS[0], "horizon": 300}
    params = {} if theta0 is None else {"theta0": [theta0, -theta0, 0.0]}
    out, asked = [], []
    for tables in (True, False):
        instance = build_instance(spec)
        env = instance.environment(0)
        policy = make_policy("DGS-LinUCB", instance.info, np.random.default_rng(2),
                             epsilon=0.8, delta=1e-5, **params)
        policy.begin(env)
        policy.choose = lambda t, arms, tables=tables, choose=policy.choose: (
            asked.append((tables, t)), choose(t, arms))[1]
        out.append(played(policy, env, tables))
        out[-1]["state"] = snapshot({k: v for k, v in vars(policy).items()
                                     if k not in CACHES | {"choose"}})
    assert_same_bits(*out)
    compiled = sum(1 for tables, _ in asked if tables)
    assert sum(1 for tables, _ in asked if not tables) == 300
    assert (0 < compiled < 300) if python_rounds == "some" else compiled == 0


def _switches_made(name: str, params: dict[str, Any], accounting: str, tables: bool,
                   out: list[dict[str, Any]]) -> int:
    """`played` of a zCDP-Episodic run appended to `out`; how many switches its Python
    `switch` made."""
    instance = build_instance({**POOLS[0], "horizon": 300})
    env = instance.environment(0)
    policy = make_policy(name, instance.info, np.random.default_rng(2), epsilon=0.8,
                         delta=1e-5, accounting=accounting, **params)
    policy.begin(env)
    made: list[int] = []
    policy.switch = lambda t, switch=policy.switch: (made.append(t), switch(t))[0]
    out.append(played(policy, env, tables))
    out[-1]["state"] = snapshot({k: v for k, v in vars(policy).items()
                                 if k not in CACHES | {"switch"}})
    return len(made)


@pytest.mark.parametrize("accounting,theta0,python_switches", [
    ("strict", None, "none"), ("strict", 4e10, "some"), ("paper", None, "all")])
def test_episodic_switches_under_exact_noise_are_made_in_the_loop(
        accounting: str, theta0: float | None, python_switches: str) -> None:
    """Exact noise: the compiled rounds make the switches, the ledger written after them; a
    warm start of ±4·10^10 puts some episodes' θ̂ beyond 2^53·γ, whose releases take
    `snapped_release`'s other path, in the policy's `switch`. Numpy noise: every switch is the
    policy's."""
    params: dict[str, Any] = {"c_trigger": 1.2}
    if theta0 is not None:
        params["theta0"] = [theta0, -theta0, 0.0]
    out: list[dict[str, Any]] = []
    by_policy_with_tables = _switches_made("zCDP-Episodic", params, accounting, True, out)
    by_policy_round_loop = _switches_made("zCDP-Episodic", params, accounting, False, out)
    assert_same_bits(*out)
    assert by_policy_round_loop > 10
    expected = {"none": 0, "all": by_policy_round_loop}.get(python_switches)
    if expected is not None:
        assert by_policy_with_tables == expected
    else:
        assert 0 < by_policy_with_tables < by_policy_round_loop


def test_episode_estimates_remembered_past_the_compiled_memos_size() -> None:
    """Noisy rewards make every one-sample episode's b its own: far more distinct episodes than
    the compiled memo holds before it empties (512)."""
    spec = {**GLM_NOISY, "horizon": 1500}
    params = {"c_trigger": 1.0}
    a = play("zCDP-Episodic", params, spec, 1, "strict", tables=True)
    assert_same_bits(a, play("zCDP-Episodic", params, spec, 1, "strict", tables=False))
    assert len(dict(a["events"])[repr("switch")][3]) // 8 > 1200


class _Stopped(Exception):
    """Raised by a signal handler while a compiled loop runs."""


def _interrupted(name: str, params: dict[str, Any], horizon: int, delay: float
                 ) -> tuple[Any, Any, int]:
    """A strict run of the table rounds with a SIGALRM handler raising after `delay` s; the
    policy, the round loop's after as many rounds as it played, and that number."""
    instance = build_instance({**POOLS[0], "horizon": horizon})
    env = instance.environment(0)

    def begun() -> Any:
        policy = make_policy(name, instance.info, np.random.default_rng(5), epsilon=0.8,
                             delta=1e-5, **params)
        policy.begin(env)
        return policy

    def stop(signum: int, frame: object) -> None:
        raise _Stopped

    policy = begun()
    tables = runner.outcome_tables(policy, env)
    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, delay)
    try:
        policy.play_table(tables)
        signal.pause()  # the signal after the last round: raises here
    except _Stopped:
        pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    rounds = policy.gram_version
    reference = begun()
    reference_tables = runner.outcome_tables(reference, env)
    for t in range(rounds):
        finish_round(reference, reference_tables, t, reference.select(t, env.arms(t)))
    assert tables.regret[:rounds].tobytes() == reference_tables.regret[:rounds].tobytes()
    return policy, reference, rounds


def _same_state(policy: Any, reference: Any) -> None:
    state = [snapshot({k: v for k, v in vars(p).items() if k not in CACHES})
             for p in (policy, reference)]
    assert state[0] == state[1]  # DGS-LinUCB's count of releases (its ledger's, at finish)
    assert policy.ledger.to_json() == reference.ledger.to_json()


STOPPABLE = [("zCDP-Episodic", {"c_trigger": 1.0}), ("DGS-LinUCB", {})]


@pytest.mark.parametrize("name,params", STOPPABLE)
def test_a_signal_the_thread_keeps_blocked_does_not_stall_the_loops(
        name: str, params: dict[str, Any]) -> None:
    """A signal pending all along because the thread blocks it itself: each call plays rounds
    before it stops for it, so the run completes, with the round loop's bits."""
    faulthandler.dump_traceback_later(120, exit=True)  # a stalled loop fails, not hangs
    previous_handler = signal.signal(signal.SIGUSR1, lambda signum, frame: None)
    previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
    try:
        signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)
        assert signal.SIGUSR1 in signal.sigpending()
        spec = {**POOLS[0], "horizon": 9000}
        fast = play(name, params, spec, 0, "strict", tables=True)
        assert signal.SIGUSR1 in signal.sigpending()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)
        signal.signal(signal.SIGUSR1, previous_handler)
        faulthandler.cancel_dump_traceback_later()
    assert_same_bits(fast, play(name, params, spec, 0, "strict", tables=False))


def test_held_signals_are_those_a_handler_can_be_set_for() -> None:
    """`hold_signals` blocks SIGINT, SIGTERM and SIGALRM but not a fault, and `restore_signals`
    puts the mask back; anything but its own bytes is refused."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    previous = _ridge.hold_signals()
    try:
        held = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    finally:
        _ridge.restore_signals(previous)
    assert {signal.SIGINT, signal.SIGTERM, signal.SIGALRM} <= held
    assert signal.SIGSEGV not in held and signal.SIGINT not in before
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before
    with pytest.raises(TypeError, match="previous is not allowed"):
        _ridge.restore_signals(b"not a mask")


@pytest.mark.parametrize("name,params", STOPPABLE)
def test_a_loop_stopped_by_an_exception_leaves_the_round_loops_state(
        name: str, params: dict[str, Any]) -> None:
    """A signal during a long compiled call stops it between rounds (the loop looks every 4096
    rounds), and its handler's exception is raised after the policy has recorded what the call
    released: the ledger, statistics and generators are the round loop's after as many rounds."""
    policy, reference, rounds = _interrupted(name, params, 400_000, 0.2)
    assert 0 < rounds < 400_000 and rounds % 4096 == 0
    _same_state(policy, reference)
    assert (len(policy.ledger.entries) if name == "zCDP-Episodic" else policy.releases) > 1000


@pytest.mark.parametrize("name,params", STOPPABLE)
def test_a_signal_at_any_moment_leaves_every_release_recorded(
        name: str, params: dict[str, Any]) -> None:
    """Signals are held while a call runs and its releases are recorded: one that arrives after
    the loop's last look, or while the policy writes the ledger, is handled after the records."""
    for delay in (0.001, 0.002, 0.004, 0.008, 0.012, 0.02):
        policy, reference, _ = _interrupted(name, params, 4000, delay)
        _same_state(policy, reference)


class TableEnvironment(RoundEnvironment):
    """A round environment straight from given tables."""

    def __init__(self, contexts: np.ndarray, rewards: np.ndarray) -> None:
        self.contexts, self.rewards = contexts, rewards
        horizon, k, d = contexts.shape
        self.info = ProblemInfo("linear", d, k, horizon, 1.0)

    def arms(self, t: int) -> np.ndarray:
        return self.contexts[t]

    def pull(self, t: int, index: int) -> tuple[float, float]:
        return float(self.rewards[t, index]), float(index)

    def outcome_tables(self) -> tuple[np.ndarray, np.ndarray]:
        regrets = np.broadcast_to(np.arange(self.info.K, dtype=float), self.rewards.shape)
        return self.rewards, np.ascontiguousarray(regrets)


@pytest.mark.parametrize("name,params", [CASES[0], CASES[2], CASES[4], CASES[11], CASES[14],
                                         CASES[17]], ids=lambda c: str(c))
def test_nan_scores_and_ties_pick_as_numpys_argmax(name: str, params: dict[str, Any]) -> None:
    """A NaN feature makes its arm's score NaN, which numpy's argmax picks; equal arms tie, and
    the lowest index wins."""
    g = np.random.default_rng(4)
    contexts = g.standard_normal((300, 4, 3)) / 3
    contexts[::7, 2] = contexts[::7, 1]  # ties
    contexts[150, 3, 0] = np.nan  # its score is NaN; picked, it makes A NaN from then on
    rewards = (g.random((300, 4)) < 0.5).astype(float)
    out = []
    for tables in (True, False):
        env = TableEnvironment(contexts, rewards)
        policy = make_policy(name, env.info, np.random.default_rng(1), epsilon=0.8,
                             delta=1e-5, accounting="paper", **params)
        policy.begin(env)
        out.append(played(policy, env, tables))
    assert_same_bits(*out)
    assert out[0]["actions"][150] == 3


def jdp_play(spec: dict[str, Any], tables: bool, change: Any = None) -> tuple[dict[str, Any],
                                                                               int]:
    """`played` of a strict JDP-LinUCB after `change(policy)`, and how many rounds its Python
    `observe` played."""
    instance = build_instance(spec)
    env = instance.environment(0)
    policy = make_policy("JDP-LinUCB", instance.info, np.random.default_rng(3), epsilon=0.8,
                         delta=1e-5)
    policy.begin(env)
    if change is not None:
        change(policy)
    observed = []
    observe = policy.observe
    policy.observe = lambda t, x, r: (observed.append(t), observe(t, x, r))  # type: ignore
    out = played(policy, env, tables)
    out["state"] = snapshot({k: v for k, v in vars(policy).items()
                             if k not in CACHES | {"observe", "choose"}})
    return out, len(observed)


def _no_shift(policy: Any) -> None:
    """V_t = tree noise alone: often not positive definite, so the policy floors it."""
    policy.base = 1e-9 * np.eye(policy.d)


def _tiny_grid(policy: Any) -> None:
    """Every leaf fails the quick snap test, so the tree's own snap takes it."""
    policy.leaf_grid = 1e-300


@pytest.mark.parametrize("change,where", [(None, "compiled"), (_no_shift, "floored"),
                                          (_tiny_grid, "snapped")])
@pytest.mark.parametrize("block", [5, 1024])
@pytest.mark.parametrize("eager", [True, False])
@pytest.mark.parametrize("arrays", [True, False])
def test_jdp_rounds_give_the_round_loops_bits_where_python_must_play(
        change: Any, where: str, block: int, eager: bool, arrays: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of node noises drawn ahead (5 rounds, or all 400 in one), with rounds that only
    the policy can play: a V_t to floor (`choose`), a leaf for the tree's snap (`observe`).
    A block is planned once, however many rounds the policy plays in it: with array
    operations, or round by round (the plan of a cover in another order than its nodes
    joined, here forced). The tree's noises are drawn up front (eager), or as the nodes come
    in (lazy, as at T = 10,000)."""
    monkeypatch.setattr(jdp_linucb, "NOISE_BLOCK", block)
    if not eager:
        monkeypatch.setattr(tree_module, "EAGER_MAX_ENTRIES", 0)
    if not arrays:
        monkeypatch.setattr(jdp_linucb, "_joined_order", lambda count, height: None)
    plans = []
    plan = jdp_linucb.JDPLinUCB.noise_plan
    monkeypatch.setattr(jdp_linucb.JDPLinUCB, "noise_plan",
                        lambda self, start, stop: plans.append(plan(self, start, stop))
                        or plans[-1])
    spec = {**POOLS[0], "horizon": 400}
    fast, observed = jdp_play(spec, True, change)
    assert len(plans) == -(-400 // block)
    assert all((p.steps is None) == arrays for p in plans)
    slow, _ = jdp_play(spec, False, change)
    assert_same_bits(fast, slow)
    floors = dict(slow["diagnostics"])[repr("floor_events")]
    if where == "compiled":
        assert observed == 0 and floors == ("number", "0.0")
    elif where == "floored":
        assert 0 < observed < 400 and floors != ("number", "0.0")
    else:
        assert observed == 400


def test_jdp_rounds_refuse_a_draw_from_the_tree_generator_they_drew_ahead_from() -> None:
    """The noises of a block are drawn before its rounds: a draw in between would shift them."""

    def draw_when_flooring(policy: Any) -> None:
        _no_shift(policy)
        choose = policy.choose
        policy.choose = lambda t, arms: (policy.tree.rng.random(), choose(t, arms))[1]

    with pytest.raises(RuntimeError, match="the tree's generator was drawn from"):
        jdp_play({**POOLS[0], "horizon": 100}, True, draw_when_flooring)
    jdp_play({**POOLS[0], "horizon": 100}, True, _no_shift)  # the control: no draw, no error


@pytest.mark.parametrize("family", ["logistic", "probit", "linear"])
@pytest.mark.parametrize("name,params", GLM_CASES, ids=lambda c: str(c))
def test_glm_table_rounds_give_the_round_loops_bits(name: str, params: dict[str, Any],
                                                    family: str) -> None:
    spec = {**GLM, "family": family, "horizon": 600}
    if family == "linear" and name == "RS-GLinUCB":  # its fits: Newton only
        params = {**params, "solver": "newton"}
    for trial in (0, 1):
        assert_same_bits(play(name, params, spec, trial, "paper", tables=True),
                         play(name, params, spec, trial, "paper", tables=False))


def test_glm_table_rounds_leave_warm_ups_and_switches_to_select(monkeypatch) -> None:
    """Most rounds compiled, the warm-up and switch rounds through `select`; θ_w one ulp off
    in the compiled rounds changes the run (negative control)."""
    cls = get_policy_class("RS-GLinUCB")
    selected: list[int] = []
    select = cls.select
    monkeypatch.setattr(cls, "select", lambda self, t, arms: selected.append(t) or select(
        self, t, arms))
    spec, params = {**GLM, "horizon": 600}, {"variant": "C"}
    run = play("RS-GLinUCB", params, spec, 0, "paper", tables=True)
    assert 0 < len(selected) < 300
    events = dict(run["events"])
    assert all(len(events[f"'{name}'"][3]) for name in ("warmup_rounds", "switch_times"))
    monkeypatch.setattr(cls, "select", select)
    compiled = _glm_rounds.rs_glinucb

    def nudged(*args: Any) -> Any:
        args = list(args)
        args[8] = np.nextafter(args[8], np.inf)  # θ_w
        return compiled(*args)

    monkeypatch.setattr(_glm_rounds, "rs_glinucb", nudged)
    assert play("RS-GLinUCB", params, spec, 0, "paper", tables=True) != run


@pytest.mark.parametrize("params,spec", ECOLOG_CASES, ids=lambda c: str(c))
def test_ecolog_table_rounds_give_the_round_loops_bits(params: dict[str, Any],
                                                       spec: dict[str, Any]) -> None:
    spec = {**spec, "horizon": 600}
    for trial in (0, 1):
        assert_same_bits(play("ECOLog", params, spec, trial, "paper", tables=True),
                         play("ECOLog", params, spec, trial, "paper", tables=False))


@pytest.mark.parametrize("family", ["logistic", "probit"])
@pytest.mark.parametrize("params", [{}, {"newton_cap": 0.3}])
def test_glm_ucb_table_rounds_are_compiled_capped_fits_included(monkeypatch, family: str,
                                                                params: dict[str, Any]) -> None:
    """Newton's rounds never go through `select`, those whose fit is capped onto the ball
    (the minimiser a Python call) included."""
    cls = get_policy_class("GLM-UCB")
    monkeypatch.setattr(cls, "select", lambda *_: pytest.fail("a round through select"))
    run = play("GLM-UCB", params, {**GLM, "family": family, "horizon": 300}, 0, "paper",
               tables=True)
    capped = float(dict(run["diagnostics"])["'norm_cap_events'"][1])
    assert (capped > 0) == ("newton_cap" in params)


@pytest.mark.parametrize("name,kernel,argument", [("ECOLog", "ecolog", 8),  # S
                                                   ("GLOC", "gloc", 9),  # c_μ
                                                   ("GLM-UCB", "glm_ucb", 18)])  # λ
def test_glm_table_rounds_with_a_changed_bit_are_caught(monkeypatch, name: str, kernel: str,
                                                        argument: int) -> None:
    """Negative control: one argument one ulp off in the compiled rounds changes the run."""
    spec = {**GLM, "horizon": 300}
    run = play(name, {}, spec, 0, "paper", tables=True)
    compiled = getattr(_glm_rounds, kernel)

    def nudged(*args: Any) -> Any:
        args = list(args)
        args[argument] = np.nextafter(args[argument], np.inf)
        return compiled(*args)

    monkeypatch.setattr(_glm_rounds, kernel, nudged)
    assert play(name, {}, spec, 0, "paper", tables=True) != run


@pytest.mark.parametrize("nan_compat", [False, True])
def test_ecolog_table_rounds_clamp_a_negative_radius_as_the_round_loop(nan_compat: bool) -> None:
    """radius² < 0 (a cumulative-loss term far below zero): clamped, or arm 0 played."""
    runs = []
    for tables in (True, False):
        instance = build_instance({**GLM, "horizon": 200})
        env = instance.environment(0)
        policy = make_policy("ECOLog", instance.info, np.random.default_rng(1),
                             nan_compat=nan_compat)
        policy.begin(env)
        policy.cum = -1e4
        runs.append(played(policy, env, tables))
    assert_same_bits(*runs)
    assert dict(runs[0]["diagnostics"])["'clamp_events'"] == ("number", "200.0")


@pytest.mark.parametrize("name,params", [("RS-GLinUCB", {}), ("RS-GLinUCB", {"variant": "C"}),
                                         ("GLOC", {}), ("ECOLog", {"lam0": 0.5})],
                         ids=lambda c: str(c))
@pytest.mark.parametrize("spec", [{**GLM, "d": 12, "K": 3, "S": 4.0},  # RS: every round warms up
                                  {**GLM, "d": 1, "K": 1}, {**GLM, "d": 1, "K": 5}],
                         ids=["warm", "d1K1", "d1"])
def test_glm_table_rounds_at_the_edges(name: str, params: dict[str, Any],
                                       spec: dict[str, Any]) -> None:
    spec = {**spec, "horizon": 300}
    assert_same_bits(play(name, params, spec, 0, "paper", tables=True),
                     play(name, params, spec, 0, "paper", tables=False))


def test_ecolog_table_rounds_raise_where_the_round_loop_raises() -> None:
    """S·n < 1 makes ECOLog's iteration count negative, and its step's coefficients then raise
    IndexError: the compiled rounds leave such a round to `update`, which raises alike."""
    spec = {**GLM, "S": 0.1, "horizon": 50}
    for tables in (True, False):
        with pytest.raises(IndexError):
            play("ECOLog", {}, spec, 0, "paper", tables=tables)


@pytest.mark.parametrize("name", ["RS-GLinUCB", "GLOC", "ECOLog"])
def test_glm_table_rounds_with_a_wrapped_link_play_round_by_round(monkeypatch,
                                                                   name: str) -> None:
    """μ and μ̇ from Python wrappers of scipy's ufuncs (as under `SCIPY_ARRAY_API=1`): the
    compiled rounds are not asked, and the run is the round loop's."""
    ufunc = links.expit
    wrapper = lambda z: ufunc(z)  # noqa: E731 - a ufunc's Python wrapper
    monkeypatch.setattr(links, "expit", wrapper)
    monkeypatch.setattr(links, "LOGISTIC", dataclasses.replace(links.LOGISTIC, mean=wrapper))
    monkeypatch.setitem(links.LINKS, "logistic", links.LOGISTIC)
    monkeypatch.setattr(ecolog_module, "expit", wrapper)
    for kernel in ("rs_glinucb", "gloc", "ecolog"):
        monkeypatch.setattr(_glm_rounds, kernel, None)  # a call would raise TypeError
    spec = {**GLM, "horizon": 200}
    assert_same_bits(play(name, {}, spec, 0, "paper", tables=True),
                     play(name, {}, spec, 0, "paper", tables=False))


def test_gloc_plays_an_empty_table() -> None:
    instance = build_instance({**GLM, "horizon": 5})
    policy = make_policy("GLOC", instance.info, np.random.default_rng(0))
    d, K = instance.info.d, instance.info.K
    empty = OutcomeTables(np.empty((0, K, d)), np.empty((0, K)), np.empty((0, K)),
                          np.empty(0), np.empty(0), np.empty(0, dtype=np.int64))
    policy.play_table(empty)
    assert policy.B == make_policy("GLOC", instance.info, np.random.default_rng(0)).B


def test_every_policy_that_plays_tables_is_covered_here() -> None:
    playing = {name for name in POLICIES.names() if runner.plays_tables(get_policy_class(name))}
    assert playing == {name for name, _ in CASES + GLM_CASES} | {"ECOLog"}


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


def test_an_environment_that_pulls_otherwise_is_played_round_by_round() -> None:
    """`outcome_tables` inherited by a subclass that overrides `pull` does not describe it."""

    class Flipped(GLMEnvironment):
        def pull(self, t: int, index: int) -> tuple[float, float]:
            reward, regret = super().pull(t, index)
            return 1.0 - reward, regret

    instance = build_instance({**GLM, "horizon": 100})
    env = instance.environment(0)
    flipped = Flipped(instance, env.rewards)
    policy = make_policy("LinUCB", instance.info, np.random.default_rng(0))
    assert runner.outcome_tables(policy, env) is not None
    assert runner.outcome_tables(policy, flipped) is None
    policy.begin(flipped)
    _, reward, actions = runner._round_loop(policy, flipped)
    assert reward.tolist() == [1.0 - env.rewards[t, i] for t, i in enumerate(actions)]


def test_the_round_loop_is_used_without_outcome_tables() -> None:
    """An environment without outcome tables is played round by round, with the same bits."""
    spec = {**POOLS[0], "horizon": 120}
    instance = build_instance(spec)
    env = instance.environment(0)
    env.outcome_tables = lambda: None  # type: ignore[method-assign]
    policy = make_policy("LinTS", instance.info, np.random.default_rng([0, 17]))
    policy.begin(env)
    assert runner.outcome_tables(policy, env) is None
    regret, _, _ = runner._round_loop(policy, env)
    assert snapshot(regret) == play("LinTS", {}, spec, 0, "strict", True)["regret"]


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


def test_the_loops_hold_no_memory_after_they_return() -> None:
    """Every array a round makes (einsum's squares) is released: memory stays flat."""
    instance = build_instance({**POOLS[1], "horizon": 3000})
    env = instance.environment(0)

    def run() -> None:
        policy = make_policy("AdaPrivate-UCB", instance.info, np.random.default_rng(0), B=3000,
                             epsilon=1.0, delta=1e-5)
        policy.begin(env)
        runner._round_loop(policy, env)

    run()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        run()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 100_000  # 3000 rounds' arrays of squares kept would be over 300 kB


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


def test_bind_takes_only_scipys_wrappers_of_the_named_routines() -> None:
    routines = [lapack.dpotrf, lapack.dpotrs, lapack.dtrtrs, blas.dsyr, blas.daxpy, blas.dtrsm,
                blas.dtrsv, lapack.dsyevx]
    swapped = [routines[3], *routines[1:3], routines[0], *routines[4:]]
    with pytest.raises(TypeError, match="dpotrf is not allowed; must be scipy's f2py wrapper"):
        _ridge.bind(*swapped, np.linalg.LinAlgError)
    with pytest.raises(TypeError, match="dsyr is not allowed"):
        _ridge.bind(*routines[:3], object(), *routines[4:], np.linalg.LinAlgError)
    with pytest.raises(TypeError, match="dsyevx is not allowed"):
        _ridge.bind(*routines[:7], lapack.dsyev, np.linalg.LinAlgError)
    _ridge.bind(*routines, np.linalg.LinAlgError)  # the control: the right ones bind


def _tables(d: int = 3, K: int = 2, T: int = 4) -> OutcomeTables:
    return OutcomeTables(np.zeros((T, K, d)), np.zeros((T, K)), np.zeros((T, K)), np.empty(T),
                         np.empty(T), np.empty(T, dtype=np.int64))


def _run_arguments(d: int = 3, K: int = 2, T: int = 4) -> list[Any]:
    return [np.asfortranarray(np.eye(d)), np.zeros(d), np.zeros(d), _tables(d, K, T), 0, T, UCB,
            1.0, None, 0, MEAN_EVERY_ROUND, None, None, 0, 0, T]


def _switching_arguments(d: int = 3, K: int = 2, T: int = 4) -> list[Any]:
    eye = np.asfortranarray(np.eye(d))
    return [eye.copy(order="F"), np.zeros(d), np.zeros(d), eye, _tables(d, K, T), 0, T, 1.0, 0,
            0.0, 0.0, 0.0, 0.69, 1.0]


def _episodic_arguments(d: int = 3, K: int = 2, T: int = 4) -> list[Any]:
    eye = np.asfortranarray(np.eye(d))
    return [eye.copy(order="F"), eye.copy(order="F"), np.zeros(d), np.zeros(d),
            _tables(d, K, T), 0, T, 1.0, 0, 0.0, 0.69, eye.copy(order="F"), np.zeros(d), 0.5,
            np.random.default_rng(0).bit_generator.capsule, np.zeros((T, 4))]


def _tree_arguments(d: int = 3, K: int = 2, T: int = 4) -> list[Any]:
    size = d + 1
    return [np.zeros((size, size)), np.eye(d), np.zeros(d), np.zeros(d), _tables(d, K, T), 0, T,
            1.0, 0.5, 2.0**52, np.ones((2, size, size)) * [[[1.0]], [[2.0]]],
            np.array([1, 3, 3, 0], dtype=np.int64),
            np.array([0, 1, 2, 3, 4], dtype=np.int64)]


def _dgs_arguments(d: int = 3, K: int = 2, T: int = 4) -> list[Any]:
    return [np.asfortranarray(np.eye(d)), np.zeros(d), np.zeros(d), _tables(d, K, T), 0, T, 1.0,
            2.0, None, np.zeros((T, d)), 0]


def _with_tables(**fields: Any) -> OutcomeTables:
    return OutcomeTables(**{**vars(_tables()), **fields})


BAD = {  # function: [(argument position, bad value, message)]
    "run": [
        (0, np.eye(3), "a is not allowed"),  # C order
        (0, np.asfortranarray(np.eye(3)).astype(">f8"), "a is not allowed"),  # byte order
        (1, np.zeros(4), "b is not allowed"),
        (2, None, "theta"),
        (3, _with_tables(arms=np.zeros((4, 2, 3), dtype=np.float32)), "arms is not allowed"),
        (3, _with_tables(rewards=np.zeros((4, 3))), "rewards is not allowed"),
        (3, _with_tables(regret=np.empty(3)), "regret is not allowed"),
        (3, _with_tables(chosen=np.empty(4)), "chosen is not allowed"),
        (6, 2, "action = 2 is not allowed"),
        (10, 3, "mean_rule = 3 is not allowed"),
        (14, -1, "batch = -1 is not allowed"),
        (5, 5, r"rounds \[0, 5\) are not allowed"),
    ],
    "run_switching": [
        (3, np.eye(3), "factor_tau is not allowed"),  # C order
        (1, np.zeros(2), "s is not allowed"),
        (4, _with_tables(reward=np.empty(5)), "reward is not allowed"),
        (6, 5, r"rounds \[0, 5\) are not allowed"),
    ],
    "run_episodic": [
        (1, np.eye(2, order="F"), "a_episode is not allowed"),
        (2, np.zeros(4), "b_episode is not allowed"),
        (4, _with_tables(arms=np.zeros((4, 2, 3), order="F")), "arms is not allowed"),
        (11, np.eye(3), "a_start is not allowed"),
        (12, np.zeros(2), "b_start is not allowed"),
        (13, 0.0, "rho = 0.0 is not allowed"),
        (13, float("inf"), "rho = inf is not allowed"),
        (14, object(), "capsule is not allowed"),
        (15, np.zeros((4, 3)), "records is not allowed"),
    ],
    "run_tree": [
        (0, np.zeros((3, 3)), "released is not allowed"),
        (1, np.eye(3, order="F")[:, :2], "base is not allowed"),
        (3, np.zeros(3, dtype=np.float32), "theta is not allowed"),
        (8, -1.0, "grid = -1.0 is not allowed"),
        (8, float("nan"), "grid = nan is not allowed"),
        (10, np.ones((2, 3, 3)), "noises is not allowed"),
        (11, np.array([1, 3, 0, 4], dtype=np.int64), "each op name one of the noises"),
        (11, np.array([1, 3, 0, -2], dtype=np.int64), "each op name one of the noises"),
        (12, np.array([0, 2, 1, 3, 4], dtype=np.int64), "offsets must rise"),
        (12, np.array([0, 1, 2, 3, 5], dtype=np.int64), "offsets must rise"),
        (12, np.array([0, 1, 2, 4], dtype=np.int64), "offsets of stop - t"),
        (11, np.array([1, 3, 3, 0], dtype=np.int32), "must be aligned native int64"),
        (11, np.frombuffer(b"\0" + np.array([1, 3, 3, 0]).tobytes(), dtype=np.int64, offset=1),
         "must be aligned native int64"),
    ],
    "run_dgs": [
        (0, np.eye(3), "a is not allowed"),  # C order
        (2, np.zeros(2), "theta is not allowed"),
        (8, object(), "capsule is not allowed"),
        (9, np.zeros((4, 2)), "normals is not allowed"),
        (10, 5, "normal_index = 5 is not allowed"),
        (5, 5, r"rounds \[0, 5\) are not allowed"),
    ],
}
ARGUMENTS = {"run": _run_arguments, "run_switching": _switching_arguments,
             "run_episodic": _episodic_arguments, "run_tree": _tree_arguments,
             "run_dgs": _dgs_arguments}


@pytest.mark.parametrize("function,position,value,message",
                         [(f, *case) for f, cases in BAD.items() for case in cases])
def test_the_loops_refuse_bad_arguments_with_one_line(function: str, position: int, value: Any,
                                                      message: str) -> None:
    args = ARGUMENTS[function]()
    args[position] = value
    with pytest.raises((ValueError, TypeError), match=message) as caught:
        getattr(_ridge, function)(*args)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("function,first,second", [
    ("run", 2, 1),  # θ̂ written over b
    ("run", 1, "regret"),
    ("run_switching", 1, 0),  # s inside A
    ("run_episodic", 0, 1),
    ("run_episodic", 3, 12),  # θ̃ written over b_start
    ("run_tree", 3, 2),  # θ̂ written over the shift
    ("run_tree", 0, 10),  # the release inside the noises
    ("run_dgs", 2, 1),  # θ̃ written over b
])
def test_the_loops_refuse_arrays_that_share_memory(function: str, first: int,
                                                   second: int | str) -> None:
    args = ARGUMENTS[function]()
    if second == "regret":
        args[first] = args[3].regret[:3]
    elif function == "run_tree" and first == 0:
        args[first] = args[second][1]
    elif function == "run_switching":
        args[first] = args[second].reshape(-1, order="F")[:3]
    else:
        args[first] = args[second]
    with pytest.raises(ValueError, match="not allowed to share memory"):
        getattr(_ridge, function)(*args)


def test_the_loops_with_good_arguments_play_the_rounds() -> None:
    """The control of the refusals above: the unchanged arguments play all 4 rounds."""
    for function, arguments in ARGUMENTS.items():
        args = arguments()
        assert getattr(_ridge, function)(*args)[0] == 4
        assert args[3 if function in ("run", "run_dgs") else 4].chosen.tolist() == [0, 0, 0, 0]
    args = _tree_arguments()  # the leaves (x = 0, r = 0) add nothing; the noises + 1 + 2 + 2 − 1
    _ridge.run_tree(*args)
    assert args[0].tolist() == np.full((4, 4), 4.0).tolist()
