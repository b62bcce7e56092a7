"""The runner owns every loop and closes every private policy's ledger on every environment."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from dpbandits.contract import (
    FixedActionEnvironment,
    ProblemInfo,
    ReplayEnvironment,
    RoundEnvironment,
)
from dpbandits.errors import ConfigError, PrivacyBudgetError
from dpbandits.policies.base import BatchedPolicy, Policy
from dpbandits.policies.uniform import Uniform
from dpbandits.runner import _select_update_loop, run_policy

INFO = ProblemInfo("linear", 2, 3, 6, 1.0)
ARMS = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])


class Rounds(RoundEnvironment):
    info = INFO

    def arms(self, t: int) -> np.ndarray:
        return ARMS

    def pull(self, t: int, index: int) -> tuple[float, float]:
        return float(index == 2), float(index != 2)


class Fixed(Rounds, FixedActionEnvironment):
    actions, means, noise_sd = ARMS, np.array([0.0, 0.0, 1.0]), 1.0

    def noise_rng(self) -> np.random.Generator:
        return np.random.default_rng(0)


class Replay(ReplayEnvironment):
    """Nine logged steps; the logged item is at position step % 3 and pays 1 on even steps."""

    info = INFO

    @property
    def n_steps(self) -> int:
        return 9

    def arms(self, step: int) -> np.ndarray:
        return ARMS * 2.0  # outside the unit ball: a policy's prepare_arms sees these

    def logged_index(self, step: int) -> int:
        return step % 3

    def logged_reward(self, step: int) -> float:
        return float(step % 2 == 0)


class Overspender(Policy):
    """Strict private policy that releases twice its budget in `finish`, plays arm t % 3."""

    name = "Overspender-test"
    private = True
    families: ClassVar[tuple[str, ...]] = ("linear",)

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self.calls: list[str] = []

    def begin(self, env) -> None:  # noqa: ANN001
        self.calls.append("begin")

    def prepare_arms(self, arms: np.ndarray) -> np.ndarray:
        self.calls.append("prepare")
        return arms / np.maximum(1.0, np.linalg.norm(arms, axis=1))[:, None]

    def select(self, t: int, arms: np.ndarray) -> int:
        return t % 3

    def update(self, t: int, x: np.ndarray, r: float) -> None:
        assert np.linalg.norm(x) <= 1.0 + 1e-12  # the prepared arm, not the raw one
        self.calls.append(f"update {t}")

    def finish(self) -> None:
        self.calls.append("finish")
        self.ledger.add("test", "everything", sensitivity=1.0, noise_scale=0.5,
                        epsilon=2.0 * self.ledger.epsilon_budget, delta=0.0)


class BatchedOverspender(Overspender, BatchedPolicy):
    name = "BatchedOverspender-test"

    def play_batched(self, env: FixedActionEnvironment) -> tuple[np.ndarray, np.ndarray]:
        self.calls.append("batched")
        return np.zeros(env.horizon), np.ones(env.horizon)


def _policy(cls: type[Policy], accounting: str = "strict") -> Policy:
    return cls(INFO, np.random.default_rng(0), epsilon=1.0, delta=1e-5, accounting=accounting)


@pytest.mark.parametrize("env, cls", [(Rounds(), Overspender), (Replay(), Overspender),
                                      (Fixed(), BatchedOverspender)])
def test_strict_ledger_is_checked_after_finish_on_every_environment(env, cls) -> None:
    policy = _policy(cls)
    with pytest.raises(PrivacyBudgetError, match="overspent"):
        run_policy(policy, env)
    assert policy.calls[0] == "begin" and policy.calls[-1] == "finish"


@pytest.mark.parametrize("env, cls", [(Rounds(), Overspender), (Replay(), Overspender),
                                      (Fixed(), BatchedOverspender)])
def test_paper_ledger_reports_the_overspend_without_stopping(env, cls) -> None:
    policy = _policy(cls, accounting="paper")
    run_policy(policy, env)
    assert policy.ledger.spent() == (2.0, 0.0)


def test_round_loop_prepares_arms_and_updates_every_round() -> None:
    policy = _policy(Overspender, accounting="paper")
    result = run_policy(policy, Rounds())
    assert [c for c in policy.calls if c.startswith("update")] == [f"update {t}" for t in range(6)]
    assert result.regret.tolist() == [1.0, 1.0, 0.0] * 2
    assert result.reward.tolist() == [0.0, 0.0, 1.0] * 2


def test_replay_counts_only_logged_picks() -> None:
    """select(t) = t % 3 meets the logged position step % 3 only while t == step (mod 3)."""
    policy = _policy(Overspender, accounting="paper")
    result = run_policy(policy, Replay())
    assert result.diagnostics["replay_steps"] == 6.0  # t advances with every step here
    assert result.diagnostics["accept_rate"] == 1.0
    assert result.reward.tolist() == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    assert np.all(result.regret == 0)


def test_batched_policy_needs_a_fixed_action_environment() -> None:
    with pytest.raises(ConfigError, match="fixed-action environment") as err:
        run_policy(_policy(BatchedOverspender, accounting="paper"), Rounds())
    assert "\n" not in str(err.value)


class Table(Rounds):
    """Rounds whose arms come from a pre-drawn (T, K, d) table."""

    def __init__(self, table: np.ndarray) -> None:
        self.contexts = table

    def arms(self, t: int) -> np.ndarray:
        return self.contexts[t]


TABLE = np.tile(ARMS, (6, 1, 1))


class TrialTable(Table):
    """A table of rounds whose trials' outcomes differ: arm i of round t pays t·10 + i + trial
    and has regret −that, as `pull` and `outcome_tables` give it (or, `own_pull`, as a `pull`
    the class overrides without saying what its tables are)."""

    def __init__(self, table: np.ndarray, trial: int) -> None:
        super().__init__(table)
        self.trial = trial

    def pull(self, t: int, index: int) -> tuple[float, float]:
        value = float(10 * t + index + self.trial)
        return value, -value

    def outcome_tables(self) -> tuple[np.ndarray, np.ndarray]:
        rounds, arms = np.indices(self.contexts.shape[:2])
        values = 10.0 * rounds + arms + self.trial
        return values, -values


class OwnPull(TrialTable):
    def pull(self, t: int, index: int) -> tuple[float, float]:
        return 0.5, 0.25


@pytest.mark.parametrize("cls", [TrialTable, OwnPull])
def test_table_rounds_record_each_pull_as_the_environment_gives_it(cls: type[TrialTable]) -> None:
    """A policy's compiled rounds read the outcome tables, the values `pull` returns; where a
    subclass overrides `pull` without saying what its tables are, `select`/`update` play."""
    for trial in range(2):
        env = cls(TABLE, trial)
        result = run_policy(Uniform(INFO, np.random.default_rng(trial)), env)
        pulls = np.array([env.pull(t, int(i)) for t, i in enumerate(result.actions)])
        assert result.reward.tolist() == pulls[:, 0].tolist()
        assert result.regret.tolist() == pulls[:, 1].tolist()
        assert len(set(result.actions.tolist())) > 1


def test_table_rounds_and_select_update_give_the_same_trace() -> None:
    """Both paths call the same kernels: the table and the round loop agree bit for bit."""
    env = TrialTable(np.random.default_rng(5).random((40, 3, 2)), 1)
    table = run_policy(Uniform(INFO, np.random.default_rng(3)), env)
    rounds = _select_update_loop(Uniform(INFO, np.random.default_rng(3)), env)
    np.testing.assert_array_equal(table.actions, rounds[2])
    np.testing.assert_array_equal(table.regret, rounds[0])
