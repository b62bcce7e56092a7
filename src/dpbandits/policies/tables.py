"""Rounds on pre-drawn outcome tables (`contract.OutcomeTables`): the pull the policies'
compiled round loops make (what the runner's round loop records for `env.pull(t, i)`), and the
rounds a compiled loop leaves to `select` and `update`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from dpbandits.contract import OutcomeTables
from dpbandits.jit import jit

if TYPE_CHECKING:
    from dpbandits.policies.base import Policy


@jit
def pull(tables: OutcomeTables, t: int, i: int) -> float:
    """Round t plays arm i: its regret, reward and index go into the run's trace; the reward."""
    tables.chosen[t] = i
    tables.regret[t] = tables.regrets[t, i]
    reward = tables.rewards[t, i]
    tables.reward[t] = reward
    return reward


def select_update_round(policy: Policy, tables: OutcomeTables, t: int) -> None:
    """Round t played by `select`, the pull and `update`, as the runner's round loop plays it."""
    arms = tables.arms[t]
    i = int(policy.select(t, arms))
    policy.update(t, arms[i], pull(tables, t, i))


def play_rounds(policy: Policy, tables: OutcomeTables,
                stretch: Callable[[OutcomeTables, int], int] | None = None) -> None:
    """Every round of the tables: from round t, `stretch(tables, t)` plays compiled rounds and
    returns the next one to play, which `select_update_round` then plays; without a stretch,
    every round so."""
    t, horizon = 0, len(tables.chosen)
    while t < horizon:
        if stretch is not None:
            t = stretch(tables, t)
        if t < horizon:
            select_update_round(policy, tables, t)
            t += 1
