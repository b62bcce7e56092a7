"""The runner: plays one policy on one environment, whatever its kind, and closes the ledger.

Every loop of the project lives here (docs/architecture.md): the round loop, the replay loop
of Li et al. (2011) and the hand-over to a batched policy. After the last round the runner calls
`policy.finish()` and then checks a private policy's ledger, so no environment can skip it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from dpbandits.contract import (
    Environment,
    FixedActionEnvironment,
    ReplayEnvironment,
    RoundEnvironment,
    RunResult,
)
from dpbandits.data import DataError
from dpbandits.errors import ConfigError
from dpbandits.policies.base import BatchedPolicy, Policy


def run_policy(policy: Policy, env: Environment) -> RunResult:
    """begin → the environment's loop → finish → ledger check; the run's trace and records."""
    policy.begin(env)
    start = time.perf_counter()
    extra: dict[str, float] = {}
    if isinstance(env, ReplayEnvironment):
        regret, reward, extra = _replay_loop(policy, env)
    elif isinstance(policy, BatchedPolicy):
        if not isinstance(env, FixedActionEnvironment):
            raise ConfigError(f"{policy.name} plays whole batches and needs a fixed-action "
                              "environment (e.g. linear_sphere)")
        regret, reward = policy.play_batched(env)
    else:
        regret, reward = _round_loop(policy, env)
    policy.finish()
    if policy.ledger is not None:
        policy.ledger.check()
    wall = time.perf_counter() - start
    diagnostics = policy.diagnostics()
    if isinstance(env, RoundEnvironment):
        diagnostics.update(env.reference_rewards(regret))
    diagnostics.update(extra)
    return RunResult(regret, reward, policy.events(), diagnostics, wall)


def _arm_source(policy: Policy, env: RoundEnvironment) -> Callable[[int], np.ndarray]:
    """Round t → the arms the policy sees (a pre-drawn table is prepared once, up front)."""
    table = env.contexts
    if isinstance(table, np.ndarray) and table.ndim == 3 and len(table) >= env.horizon:
        prepared = policy.prepare_table(table[: env.horizon])
        if prepared is not None:
            return prepared.__getitem__
    prepare, arms = policy.prepare_arms, env.arms
    return lambda t: prepare(arms(t))


def _round_loop(policy: Policy, env: RoundEnvironment) -> tuple[np.ndarray, np.ndarray]:
    """select → pull → update for every round t = 0 … T − 1."""
    horizon = env.horizon
    regret = np.empty(horizon)
    reward = np.empty(horizon)
    arms_at, select, update, pull = _arm_source(policy, env), policy.select, policy.update, env.pull
    for t in range(horizon):
        arms = arms_at(t)
        index = int(select(t, arms))
        r, reg = pull(t, index)
        regret[t] = reg
        reward[t] = r
        update(t, arms[index], r)
    return regret, reward


def _replay_loop(policy: Policy, env: ReplayEnvironment
                 ) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """Li et al. replay: select on every step, update only when the logged arm is picked,
    until `horizon` rounds are counted; pseudo-regret is 0, the metric is the CTR."""
    horizon = env.horizon
    reward = np.empty(horizon)
    t = step = 0
    while t < horizon:
        if step >= env.n_steps:
            raise DataError(env.exhausted(t, step))
        arms = policy.prepare_arms(env.arms(step))
        index = int(policy.select(t, arms))
        if index == env.logged_index(step):
            r = env.logged_reward(step)
            policy.update(t, arms[index], r)
            reward[t] = r
            t += 1
        step += 1
    extra = {"replay_steps": float(step), "accept_rate": horizon / step,
             "ctr": float(reward.mean())}
    return np.zeros(horizon), reward, extra
