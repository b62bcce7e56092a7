"""Table play of a policy whose compiled rounds stop where `select` must play a round."""

from __future__ import annotations

from collections.abc import Callable

from dpbandits.contract import OutcomeTables
from dpbandits.policies.base import Policy


def play_stretches(policy: Policy, tables: OutcomeTables,
                   stretch: Callable[[OutcomeTables, int], int] | None) -> None:
    """Every round of the tables: from round t, `stretch(tables, t)` plays compiled rounds and
    returns the next one to play, which `select` and `finish_round` then play; without a
    stretch, every round so."""
    t, horizon = 0, len(tables.chosen)
    while t < horizon:
        if stretch is not None:
            t = stretch(tables, t)
        if t < horizon:
            finish_round(policy, tables, t, int(policy.select(t, tables.arms[t])))
            t += 1


def finish_round(policy: Policy, tables: OutcomeTables, t: int, index: int) -> None:
    """Round t's pull of arm `index` recorded in the tables and fed to `policy.update`, as the
    round loop does."""
    reward = float(tables.rewards[t, index])
    tables.chosen[t] = index
    tables.regret[t] = tables.regrets[t, index]
    tables.reward[t] = reward
    policy.update(t, tables.arms[t, index], reward)
