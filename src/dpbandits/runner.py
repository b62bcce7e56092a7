"""The runner: plays one policy on one environment, whatever its kind, and closes the ledger.

Every loop of the project lives here (docs/architecture.md): the round loop (or the hand-over
to a policy's compiled rounds on pre-drawn tables), the replay loop of Li et al. (2011) and the
hand-over to a batched policy. After the last round the runner calls `policy.finish()` and
then checks a private policy's ledger, so no environment can skip it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from dpbandits.contract import (
    Environment,
    FixedActionEnvironment,
    OutcomeTables,
    ReplayEnvironment,
    RoundEnvironment,
    RunResult,
)
from dpbandits.data import DataError
from dpbandits.errors import ConfigError
from dpbandits.policies.base import BatchedPolicy, Policy

REPLAY_BLOCK = 8192  # replay steps fetched and prepared at once


def run_policy(policy: Policy, env: Environment) -> RunResult:
    """begin → the environment's loop → finish → ledger check; the run's trace and records."""
    policy.begin(env)
    return _run_begun(policy, env)


def _run_begun(policy: Policy, env: Environment) -> RunResult:
    """`run_policy` after `begin`."""
    start = time.perf_counter()
    return _close(policy, env, *_play(policy, env), start)


def _play(policy: Policy, env: Environment
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, dict[str, float]]:
    """The environment's loop: (per-round regret, per-round reward, per-round arm of a round
    environment's loop or None, extra diagnostics)."""
    if isinstance(env, ReplayEnvironment):
        return _replay_loop(policy, env)
    if isinstance(policy, BatchedPolicy):
        if not isinstance(env, FixedActionEnvironment):
            raise ConfigError(f"{policy.name} plays whole batches and needs a fixed-action "
                              "environment (e.g. linear_sphere)")
        return (*policy.play_batched(env), None, {})
    return (*_round_loop(policy, env), {})


def _close(policy: Policy, env: Environment, regret: np.ndarray, reward: np.ndarray,
           actions: np.ndarray | None, extra: dict[str, float], start: float) -> RunResult:
    """finish → ledger check → diagnostics merged with the environment's references."""
    policy.finish()
    if policy.ledger is not None:
        policy.ledger.check()
    wall = time.perf_counter() - start
    diagnostics = policy.diagnostics()
    if isinstance(env, RoundEnvironment):
        diagnostics.update(env.reference_rewards(regret))
    diagnostics.update(extra)
    return RunResult(regret, reward, policy.events(), diagnostics, wall, actions)


def _prepared_tables(policy: Policy, env: RoundEnvironment
                     ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The pre-drawn arm table covering the horizon, prepared once (`prepare_table`; None
    where the policy prepares nothing), and the table as the policy acts on it (the prepared
    one, or the table itself); (None, None) without such a table."""
    table, horizon = getattr(env, "contexts", None), env.horizon
    if not isinstance(table, np.ndarray) or table.ndim != 3 or len(table) < horizon:
        return None, None
    prepared = policy.prepare_table(table[:horizon])
    return prepared, table[:horizon] if prepared is None else prepared


def _arm_source(policy: Policy, env: RoundEnvironment,
                prepared: np.ndarray | None) -> Callable[[int], np.ndarray]:
    """Round t → the arms the policy sees: rows of the table prepared up front
    (`_prepared_tables`), else each round's arms prepared."""
    if prepared is not None:
        return prepared.__getitem__
    prepare, arms = policy.prepare_arms, env.arms
    return lambda t: prepare(arms(t))


def plays_tables(cls: type[Policy]) -> bool:
    """Whether the class itself declares `play_table` (a subclass does not inherit it, since
    it may play otherwise)."""
    return bool(vars(cls).get("plays_tables", False))


def _declared_outcomes(env: RoundEnvironment) -> tuple[np.ndarray, np.ndarray] | None:
    """`env.outcome_tables()` where the class defining `pull` defines it too (a subclass that
    pulls otherwise and did not say what its outcomes are has none); None where there is none
    (optional, as `contexts` is)."""
    tables_of = getattr(env, "outcome_tables", None)
    if tables_of is None or _defines(type(env), "outcome_tables") is not _defines(type(env),
                                                                                  "pull"):
        return None
    return tables_of()


def _defines(cls: type, name: str) -> type | None:
    """The class of `cls`'s method resolution order whose body defines `name`."""
    return next((base for base in cls.__mro__ if name in vars(base)), None)


def outcome_tables(policy: Policy, env: RoundEnvironment) -> OutcomeTables | None:
    """The run as tables for `policy.play_table`: the environment's arm table prepared once
    and its outcome tables, all covering the horizon; None where the environment has none,
    or where `outcome_tables` comes from another class than `pull` (a subclass that pulls
    otherwise and did not say what its outcomes are)."""
    horizon = env.horizon
    outcomes = _declared_outcomes(env)
    arms = None if outcomes is None else _prepared_tables(policy, env)[1]
    if arms is None:
        return None
    shape = arms.shape[:2]
    rewards, regrets = (np.ascontiguousarray(o[:horizon], dtype=float) for o in outcomes)
    # the arms as the round loop sees them: a copy in another layout could change xᵀθ's bits
    if (rewards.shape != shape or regrets.shape != shape or arms.dtype != np.float64
            or not arms.flags.c_contiguous):
        return None
    # unplayed rounds would stay NaN and -1, never another run's values
    return OutcomeTables(arms, rewards, regrets, np.full(horizon, np.nan),
                         np.full(horizon, np.nan), np.full(horizon, -1, dtype=np.int64))


def _round_loop(policy: Policy, env: RoundEnvironment
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """select → pull → update for every round t = 0 … T − 1 (`play_table` where the policy
    and the environment allow): per-round regret, reward and arm."""
    if plays_tables(type(policy)):
        tables = outcome_tables(policy, env)
        if tables is not None:
            policy.play_table(tables)
            return tables.regret, tables.reward, tables.chosen
    return _select_update_loop(policy, env)


def _select_update_loop(policy: Policy, env: RoundEnvironment
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """select → pull → update, one round at a time."""
    horizon = env.horizon
    regret = np.empty(horizon)
    reward = np.empty(horizon)
    actions = np.empty(horizon, dtype=np.int64)
    arms_at = _arm_source(policy, env, _prepared_tables(policy, env)[0])
    select, update, pull = policy.select, policy.update, env.pull
    for t in range(horizon):
        arms = arms_at(t)
        index = int(select(t, arms))
        r, reg = pull(t, index)
        regret[t] = reg
        reward[t] = r
        actions[t] = index
        update(t, arms[index], r)
    return regret, reward, actions


def _replay_loop(policy: Policy, env: ReplayEnvironment
                 ) -> tuple[np.ndarray, np.ndarray, None, dict[str, float]]:
    """Li et al. replay: select on every step, update only when the logged arm is picked,
    until `horizon` rounds are counted; pseudo-regret is 0, the metric is the CTR. The steps
    come from the environment in blocks (`tables`), their arms prepared once per block."""
    horizon = env.horizon
    reward = np.empty(horizon)
    t = step = 0
    select, update, prepare = policy.select, policy.update, policy.prepare_arms
    while t < horizon:
        if step >= env.n_steps:
            raise DataError(env.exhausted(t, step))
        block, logged, rewards = env.tables(step, step + REPLAY_BLOCK)
        prepared = policy.prepare_table(block)
        for s in range(len(logged)):
            step += 1
            arms = prepare(block[s]) if prepared is None else prepared[s]
            index = int(select(t, arms))
            if index == logged[s]:
                r = float(rewards[s])
                update(t, arms[index], r)
                reward[t] = r
                t += 1
                if t == horizon:
                    break
    extra = {"replay_steps": float(step), "accept_rate": horizon / step,
             "ctr": float(reward.mean())}
    return np.zeros(horizon), reward, None, extra
