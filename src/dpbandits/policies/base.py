"""Policy base class (the lifecycle the runner drives) and the name → class registry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from dpbandits.audit.spec import PolicyAudit
from dpbandits.contract import FixedActionEnvironment, OutcomeTables, ProblemInfo, RunResult
from dpbandits.errors import ConfigError
from dpbandits.params import Declaration, validate
from dpbandits.params import defaults as param_defaults
from dpbandits.privacy.clipping import clip_arms, clip_table
from dpbandits.privacy.ledger import ACCOUNTING_MODES, PrivacyLedger


class Policy:
    """A bandit policy: `begin(env)`, then `select(t, arms)` and `update(t, x, r)` each round,
    then `finish()`; the runner drives it (docs/architecture.md).

    Subclasses declare `parameters` (every hyper-parameter with its default, allowed values and
    a one-line doc, `dpbandits.params`); anything else is rejected by name. Private policies
    set `private = True`; their ledger is created here and is never None.
    """

    name: ClassVar[str] = ""
    private: ClassVar[bool] = False
    families: ClassVar[tuple[str, ...]] = ("logistic", "probit", "linear")
    parameters: ClassVar[Declaration] = ()
    audits: ClassVar[tuple[PolicyAudit, ...]] = ()  # a private policy's end-to-end audits
    plays_tables: ClassVar[bool] = False  # has `play_table` (the class's own, not inherited)
    # The functions that pick the arm and that learn from a reward: what `select`/`update`
    # and every compiled round loop call (`dpbandits list algorithms` names them).
    decision_rule: ClassVar[Callable[..., Any] | None] = None
    update_rule: ClassVar[Callable[..., Any] | None] = None
    defaults: ClassVar[dict[str, Any]] = {}  # derived from `parameters`

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.defaults = param_defaults(cls.parameters)

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
        checked = self.check_params(params, accounting)
        if problem.family not in self.families:
            raise ConfigError(
                f"algorithm {self.name} does not support family {problem.family!r}; "
                f"allowed: {', '.join(self.families)}"
            )
        self.problem = problem
        self.rng = rng
        self.params: dict[str, Any] = checked
        self.epsilon = epsilon
        self.delta = delta
        self.accounting = accounting
        self.ledger: PrivacyLedger | None = None
        if self.private:
            check_privacy_parameters(epsilon, delta)
            self.ledger = PrivacyLedger(float(epsilon), float(delta), accounting)  # type: ignore[arg-type]

    @classmethod
    def check_params(cls, params: dict[str, Any], accounting: str = "strict") -> dict[str, Any]:
        """The declared parameters with defaults, checked alone and against the accounting
        mode: what can be checked before any job runs (config validation calls this)."""
        if accounting not in ACCOUNTING_MODES:
            raise ConfigError(f"accounting = {accounting!r} is not allowed; allowed: "
                              f"{', '.join(ACCOUNTING_MODES)}")
        checked = validate(cls.name, cls.parameters, params, where=f"algorithm {cls.name}")
        cls.check_combined(checked, accounting)
        return checked

    @classmethod
    def check_combined(cls, params: dict[str, Any], accounting: str) -> None:
        """Reject combinations of parameters (with each other or the accounting mode) that the
        declaration alone cannot express."""

    def begin(self, env: Any) -> None:
        """Called by the runner before the first round (read what the run needs from env)."""

    @property
    def clips_contexts(self) -> bool:
        """Whether arm features are clipped to the unit ball before any use (the sensitivity
        arguments of private policies assume it)."""
        return False

    def prepare_arms(self, arms: np.ndarray) -> np.ndarray:
        """The arm features the policy acts on, from the environment's (clipped if it clips)."""
        return clip_arms(arms) if self.clips_contexts else arms

    def prepare_table(self, table: np.ndarray) -> np.ndarray | None:
        """`prepare_arms` of a whole pre-drawn (T, K, d) table at once (the same rows, bit for
        bit), or None (per round: nothing to prepare)."""
        return clip_table(table) if self.clips_contexts else None

    def select(self, t: int, arms: np.ndarray) -> int:
        raise NotImplementedError

    def update(self, t: int, x: np.ndarray, r: float) -> None:
        raise NotImplementedError

    def play_table(self, tables: OutcomeTables) -> None:
        """Every round at once on pre-drawn outcomes, filling `tables.regret` and
        `tables.reward`: the bits of select → pull → update round by round (runner)."""
        raise NotImplementedError

    def finish(self) -> None:
        """Called by the runner after the last round: final releases, closing ledger entries."""

    def events(self) -> dict[str, np.ndarray]:
        """Variable-length event records (e.g. switch times) stored with the trace."""
        return {}

    def diagnostics(self) -> dict[str, float]:
        """Scalar diagnostics (counts of fits, warm-up rounds, solver failures...)."""
        return {}

    def run(self, env: Any) -> RunResult:
        """Play every round of `env` through the runner (begin → rounds → finish → ledger)."""
        from dpbandits.runner import run_policy

        return run_policy(self, env)


class BatchedPolicy(Policy):
    """A policy that plays whole batches at once: the runner hands it the environment."""

    def select(self, t: int, arms: np.ndarray) -> int:
        raise NotImplementedError(f"{self.name} plays whole batches; run it with the runner")

    def update(self, t: int, x: np.ndarray, r: float) -> None:
        raise NotImplementedError(f"{self.name} plays whole batches; run it with the runner")

    def play_batched(self, env: FixedActionEnvironment) -> tuple[np.ndarray, np.ndarray]:
        """Every round of the run at once: (per-round pseudo-regret, per-round reward)."""
        raise NotImplementedError


def check_privacy_parameters(epsilon: float | None, delta: float | None) -> None:
    """ε > 0 finite and δ ∈ (0, 1), or one clear error."""
    if epsilon is None or not np.isfinite(epsilon) or epsilon <= 0:
        raise ConfigError(f"epsilon = {epsilon!r} is not allowed; must be a finite number > 0")
    if delta is None or not np.isfinite(delta) or not 0 < delta < 1:
        raise ConfigError(f"delta = {delta!r} is not allowed; must be in the open interval (0, 1)")
