"""The two paths of a GLM baseline's run, for its tests: the table rounds (`play_table`, through
`runner.run_policy` on an environment with outcome tables) and select → pull → update."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dpbandits import runner
from dpbandits.glm import GrowingNewton
from dpbandits.instances.registry import build_instance
from dpbandits.policies import make_policy

GLM = {"generator": "glm_ball", "family": "logistic", "d": 4, "K": 6, "S": 2.0, "seed": 3}


def snapshot(value: Any, depth: int = 0) -> Any:
    """A comparable image of a value: arrays by dtype, shape and bytes, floats by repr, the
    rows and sums of a growing fit as far as they are written."""
    if isinstance(value, GrowingNewton):
        arrays, n = value.arrays, value.n
        return snapshot((arrays.X[:n], arrays.r[:n], arrays.state, arrays.last, arrays.g_sums,
                         arrays.H_sums, arrays.loss_sums, value.stats.counts))
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, float | np.generic):
        return ("number", repr(value))
    if value is None or isinstance(value, int | str | bool):
        return value
    if isinstance(value, list | tuple):
        return tuple(snapshot(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return tuple((repr(k), snapshot(v, depth + 1)) for k, v in value.items())
    if depth < 2 and hasattr(value, "__dict__"):
        return (type(value).__name__, snapshot(vars(value), depth + 1))
    return ("object", type(value).__name__)


def played(policy: Any, env: Any, tables: bool) -> dict[str, Any]:
    """One begun run by the table rounds or by select → pull → update: its trace, events,
    diagnostics and every attribute of the policy."""
    if tables:
        assert runner.outcome_tables(policy, env) is not None
        result = runner.run_policy(policy, env)
        regret, reward, actions = result.regret, result.reward, result.actions
    else:
        regret, reward, actions = runner._select_update_loop(policy, env)
        policy.finish()
    return {"regret": snapshot(regret), "reward": snapshot(reward), "actions": actions.tolist(),
            "events": snapshot(policy.events()), "diagnostics": snapshot(policy.diagnostics()),
            "state": snapshot(vars(policy))}


def play(name: str, params: dict[str, Any], spec: dict[str, Any], tables: bool, trial: int = 0,
         change: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """`played` on a fresh instance environment and policy (after `change(policy)`)."""
    instance = build_instance(spec)
    env = instance.environment(trial)
    policy = make_policy(name, instance.info, np.random.default_rng([trial, 17]), **params)
    if change is not None:
        change(policy)
    if tables:
        return played(policy, env, True)
    policy.begin(env)
    return played(policy, env, False)


def assert_same_paths(name: str, params: dict[str, Any], spec: dict[str, Any], trial: int = 0,
                      change: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """The table rounds and select → pull → update leave the same bits; the run."""
    a = play(name, params, spec, True, trial, change)
    b = play(name, params, spec, False, trial, change)
    assert a.keys() == b.keys()
    for key in a:
        assert a[key] == b[key], key
    return a
