"""The contract between environments, policies and the runner (docs/architecture.md).

An instance builds one environment per trial. Environments come in three kinds, each a base
class here, and the runner (`dpbandits.runner`) owns the loop of every kind:

- `RoundEnvironment`: arm sets per round, `pull(t, i)` gives (reward, pseudo-regret). Optional
  public extras are plain attributes with defaults (`contexts`, `theta0`),
  `reference_rewards(regret)` and `outcome_tables()`.
- `FixedActionEnvironment`: a round environment with one fixed action set, its mean rewards
  and the trial's reward-noise stream, so that batched policies can play whole batches.
- `ReplayEnvironment`: a logged rating stream (Li et al. 2011): a step counts only when the
  policy picks the logged item; it has no pseudo-regret.

A policy follows `begin(env) → select/update … → finish()`; a batched policy plays the whole
run in `play_batched(env)` instead of select/update. The runner calls `finish()` after every
run and then checks a private policy's ledger, whatever the environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np


@dataclass(frozen=True)
class ProblemInfo:
    """Public description of a bandit problem handed to a policy at construction.

    `kappa`/`kappa_star` are the instance values computed over all T·K arms (what the papers'
    code passes); `kappa_pub`/`kappa_star_pub` are the data-independent bounds
    (docs/glm.md, "Non-linearity constants").
    """

    family: str
    d: int
    K: int
    horizon: int
    S: float
    R: float = 1.0
    kappa: float = 1.0
    kappa_star: float = 1.0
    kappa_pub: float = 1.0
    kappa_star_pub: float = 1.0


@dataclass
class RunResult:
    """What one run of a policy on one environment produced, per round and in summary."""

    regret: np.ndarray
    reward: np.ndarray
    events: dict[str, np.ndarray] = field(default_factory=dict)
    diagnostics: dict[str, float] = field(default_factory=dict)
    wall_time: float = 0.0
    actions: np.ndarray | None = None  # the arm index of each round (round environments)


class OutcomeTables(NamedTuple):
    """A whole run of a round environment, pre-drawn: the arms as the policy acts on them
    (T, K, d), every pull's reward and regret (T, K), all float64, and what the run fills: the
    per-round regret and reward (float64) and arm index (int64), (T,) each; all C-ordered. A
    named tuple of arrays, so that compiled round loops take it as one argument."""

    arms: np.ndarray
    rewards: np.ndarray
    regrets: np.ndarray
    regret: np.ndarray
    reward: np.ndarray
    chosen: np.ndarray


class RoundEnvironment:
    """One trial: arm features per round and the outcome of a pull."""

    info: ProblemInfo
    contexts: np.ndarray | None = None  # the whole (T, K, d) arm table, when pre-drawn
    theta0: np.ndarray | None = None  # a public warm-start vector, when the data has one

    @property
    def horizon(self) -> int:
        return self.info.horizon

    def arms(self, t: int) -> np.ndarray:
        """Arm features offered at round t (0-based), shape (K_t, d)."""
        raise NotImplementedError

    def pull(self, t: int, index: int) -> tuple[float, float]:
        """Play arm `index` at round t: (realised reward, pseudo-regret of that choice)."""
        raise NotImplementedError

    def reference_rewards(self, regret: np.ndarray) -> dict[str, float]:
        """Reference values for reward-based metrics (e.g. the oracle's expected reward)."""
        return {}

    def outcome_tables(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(rewards, regrets), each (T, K) float64 with `pull(t, i) == (rewards[t, i],
        regrets[t, i])` for every round and arm, when every outcome is pre-drawn; else None.
        With `contexts`, they let a policy play the whole run at once (`Policy.play_table`)."""
        return None


class FixedActionEnvironment(RoundEnvironment):
    """A fixed action set (`actions`, mean rewards `means`) with Gaussian reward noise."""

    actions: np.ndarray
    means: np.ndarray
    noise_sd: float

    def noise_rng(self) -> np.random.Generator:
        """The trial's reward-noise stream, restarted on every call (common random numbers)."""
        raise NotImplementedError


class ReplayEnvironment:
    """A logged stream of (user, item, rating) events replayed with candidate sets."""

    info: ProblemInfo
    theta0: np.ndarray | None = None

    @property
    def horizon(self) -> int:
        """Counted (accepted) rounds of a run."""
        return self.info.horizon

    @property
    def n_steps(self) -> int:
        """Replay steps available."""
        raise NotImplementedError

    def arms(self, step: int) -> np.ndarray:
        """Features of the candidate set shown at `step`, shape (K, d)."""
        raise NotImplementedError

    def logged_index(self, step: int) -> int:
        """Position of the logged item in the candidate set of `step`."""
        raise NotImplementedError

    def logged_reward(self, step: int) -> float:
        """Reward of the logged item at `step`."""
        raise NotImplementedError

    def tables(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Steps start … min(stop, n_steps) − 1 at once: their arms (n, K, d), the logged
        item's positions (n,) and rewards (n,), as `arms`, `logged_index` and `logged_reward`
        give them step by step."""
        steps = range(start, min(stop, self.n_steps))
        return (np.array([self.arms(s) for s in steps], dtype=float),
                np.array([self.logged_index(s) for s in steps], dtype=np.int64),
                np.array([self.logged_reward(s) for s in steps], dtype=float))

    def exhausted(self, counted: int, steps: int) -> str:
        """The message for a log that ran out before `horizon` rounds were counted."""
        return (f"replay log exhausted: {counted} of horizon {self.horizon} rounds counted "
                f"after {steps} steps")


Environment = RoundEnvironment | ReplayEnvironment
