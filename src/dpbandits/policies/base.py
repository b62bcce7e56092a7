"""Policy base class, run result, and the name → class registry."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from dpbandits.errors import ConfigError
from dpbandits.instances.base import Environment, ProblemInfo
from dpbandits.privacy.ledger import PrivacyLedger

ACCOUNTING_MODES = ("strict", "paper")


@dataclass
class RunResult:
    """What one run of a policy on one environment produced, per round and in summary."""

    regret: np.ndarray
    reward: np.ndarray
    events: dict[str, np.ndarray] = field(default_factory=dict)
    diagnostics: dict[str, float] = field(default_factory=dict)
    wall_time: float = 0.0


class Policy:
    """A bandit policy: `select(t, arms)` then `update(t, x, r)` each round.

    Subclasses declare `defaults` (every allowed hyper-parameter with its default); unknown
    parameters are rejected by name. Batched policies override `run` with an exact vectorised
    path. Private policies set `private = True` and keep `self.ledger`.
    """

    name: ClassVar[str] = ""
    private: ClassVar[bool] = False
    families: ClassVar[tuple[str, ...]] = ("logistic", "probit", "linear")
    defaults: ClassVar[dict[str, Any]] = {}

    def __init__(
        self,
        problem: ProblemInfo,
        rng: np.random.Generator,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        accounting: str = "strict",
        **params: Any,
    ) -> None:
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            allowed = ", ".join(sorted(self.defaults)) or "none"
            raise ConfigError(
                f"unknown parameter(s) {', '.join(unknown)} for algorithm {self.name}; "
                f"allowed: {allowed}"
            )
        if problem.family not in self.families:
            raise ConfigError(
                f"algorithm {self.name} does not support family {problem.family!r}; "
                f"allowed: {', '.join(self.families)}"
            )
        if accounting not in ACCOUNTING_MODES:
            raise ConfigError(
                f"accounting = {accounting!r} is not allowed; "
                f"allowed: {', '.join(ACCOUNTING_MODES)}"
            )
        self.problem = problem
        self.rng = rng
        self.params: dict[str, Any] = {**self.defaults, **params}
        self.epsilon = epsilon
        self.delta = delta
        self.accounting = accounting
        self.ledger: PrivacyLedger | None = None
        if self.private:
            check_privacy_parameters(epsilon, delta)
            self.ledger = PrivacyLedger(float(epsilon), float(delta), accounting)  # type: ignore[arg-type]

    def select(self, t: int, arms: np.ndarray) -> int:
        raise NotImplementedError

    def update(self, t: int, x: np.ndarray, r: float) -> None:
        raise NotImplementedError

    def events(self) -> dict[str, np.ndarray]:
        """Variable-length event records (e.g. switch times) stored with the trace."""
        return {}

    def diagnostics(self) -> dict[str, float]:
        """Scalar diagnostics (counts of fits, warm-up rounds, solver failures...)."""
        return {}

    def run(self, env: Environment) -> RunResult:
        """Play every round of `env` (0-based t) and return the per-round trace."""
        horizon = env.horizon
        regret = np.empty(horizon)
        reward = np.empty(horizon)
        start = time.perf_counter()
        for t in range(horizon):
            arms = env.arms(t)
            index = int(self.select(t, arms))
            r, reg = env.pull(t, index)
            regret[t] = reg
            reward[t] = r
            self.update(t, arms[index], r)
        wall = time.perf_counter() - start
        return RunResult(regret, reward, self.events(), self.diagnostics(), wall)


def check_privacy_parameters(epsilon: float | None, delta: float | None) -> None:
    """ε > 0 finite and δ ∈ (0, 1), or one clear error."""
    if epsilon is None or not np.isfinite(epsilon) or epsilon <= 0:
        raise ConfigError(f"epsilon = {epsilon!r} is not allowed; must be a finite number > 0")
    if delta is None or not np.isfinite(delta) or not 0 < delta < 1:
        raise ConfigError(f"delta = {delta!r} is not allowed; must be in the open interval (0, 1)")


REGISTRY: dict[str, type[Policy]] = {}


def register(cls: type[Policy]) -> type[Policy]:
    """Class decorator: make a policy available by its `name`."""
    if not cls.name:
        raise TypeError(f"{cls.__qualname__} has no name")
    if cls.name in REGISTRY and REGISTRY[cls.name] is not cls:
        raise TypeError(f"policy name {cls.name!r} registered twice")
    REGISTRY[cls.name] = cls
    return cls


def get_policy_class(name: str) -> type[Policy]:
    from dpbandits.policies import load_all

    load_all()
    try:
        return REGISTRY[name]
    except KeyError:
        raise ConfigError(
            f"unknown algorithm {name!r}; allowed: {', '.join(sorted(REGISTRY))}"
        ) from None


def make_policy(
    name: str, problem: ProblemInfo, rng: np.random.Generator, **kwargs: Any
) -> Policy:
    """Instantiate a registered policy by name."""
    return get_policy_class(name)(problem, rng, **kwargs)
