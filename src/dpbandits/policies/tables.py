"""The pull of a round on pre-drawn outcome tables (`contract.OutcomeTables`), for the
policies' compiled round loops: what the runner's round loop records for `env.pull(t, i)`."""

from __future__ import annotations

from dpbandits.contract import OutcomeTables
from dpbandits.jit import jit


@jit
def pull(tables: OutcomeTables, t: int, i: int) -> float:
    """Round t plays arm i: its regret, reward and index go into the run's trace; the reward."""
    tables.chosen[t] = i
    tables.regret[t] = tables.regrets[t, i]
    reward = tables.rewards[t, i]
    tables.reward[t] = reward
    return reward
