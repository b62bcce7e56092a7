"""Linear bandit instances: K actions and θ* uniform on the unit sphere (Hanna et al., Sec. 6)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpbandits.contract import FixedActionEnvironment, ProblemInfo
from dpbandits.errors import ConfigError
from dpbandits.instances.registry import InstanceKind
from dpbandits.params import REQUIRED, Declaration, Param, boolean, integer, number, validate
from dpbandits.seeding import instance_rng, reward_rng


def unit_sphere(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """n points uniform on S^{d−1}: normalised N(0, I_d) draws."""
    v = rng.standard_normal((n, d))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def draw_sphere_problem(rng: np.random.Generator, K: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """θ* then the K actions, both uniform on the unit sphere (paper Sec. 6)."""
    theta = unit_sphere(rng, 1, d)[0]
    return theta, unit_sphere(rng, K, d)


def _check_norms(key: str, rows: np.ndarray) -> None:
    norms = np.linalg.norm(rows, axis=-1)
    if not np.all(np.isfinite(rows)) or np.any(norms > 1.0 + 1e-9):
        raise ConfigError(
            f"{key} has norm {float(np.max(norms)):.6g}; every row must be finite with norm <= 1"
        )


LINEAR_SPHERE_KEYS: Declaration = (
    integer("K", REQUIRED, "number of actions", ge=1),
    integer("d", REQUIRED, "dimension", ge=1),
    integer("horizon", REQUIRED, "rounds T", ge=1),
    integer("seed", REQUIRED, "instance seed", ge=0),
    number("noise_sd", 1.0, "reward noise σ", gt=0),
    boolean("redraw", False, "every trial draws its own actions and θ*"),
    Param("actions", None, "explicit actions (K rows of d numbers, norm ≤ 1)",
          ("null", "matrix")),
    Param("theta", None, "explicit θ* (d numbers, norm ≤ 1)", ("null", "numbers")),
)


def _plain(value: Any) -> Any:
    """Arrays as nested lists, so that the declaration can check them."""
    return value.tolist() if isinstance(value, np.ndarray) else value


@dataclass
class LinearInstance:
    """A finite-armed linear bandit; `redraw` gives every trial its own actions and θ*."""

    K: int
    d: int
    horizon: int
    seed: int
    noise_sd: float = 1.0
    redraw: bool = False
    actions: np.ndarray | None = None
    theta: np.ndarray | None = None
    _cache: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        keys = validate("linear_sphere", LINEAR_SPHERE_KEYS,
                        {k.name: _plain(getattr(self, k.name)) for k in LINEAR_SPHERE_KEYS},
                        kind="instance key")
        self.K, self.d = keys["K"], keys["d"]
        self.horizon, self.seed = keys["horizon"], keys["seed"]
        if (self.actions is None) != (self.theta is None):
            raise ConfigError("actions and theta must be given together (or neither)")
        if self.actions is not None:
            actions = np.asarray(self.actions, dtype=float)
            theta = np.asarray(self.theta, dtype=float)
            if actions.shape != (self.K, self.d) or theta.shape != (self.d,):
                raise ConfigError(
                    f"actions shape {actions.shape} / theta shape {theta.shape} is not allowed; "
                    f"must be ({self.K}, {self.d}) / ({self.d},)"
                )
            _check_norms("actions", actions)
            _check_norms("theta", theta)
            if self.redraw:
                raise ConfigError("redraw = true is not allowed with explicit actions and theta")
            self.actions, self.theta = actions, theta
        else:
            self.theta, self.actions = draw_sphere_problem(
                np.random.default_rng(self.seed), self.K, self.d
            )

    @property
    def info(self) -> ProblemInfo:
        """Public description: ||θ*|| ≤ 1, noise standard deviation R = σ."""
        return ProblemInfo(
            family="linear", d=self.d, K=self.K, horizon=self.horizon, S=1.0, R=self.noise_sd
        )

    def problem(self, trial: int) -> tuple[np.ndarray, np.ndarray]:
        """(actions, θ*) of a trial: the seed's, or a fresh draw per trial when `redraw`."""
        if not self.redraw:
            return self.actions, self.theta  # type: ignore[return-value]
        if trial not in self._cache:
            theta, actions = draw_sphere_problem(instance_rng(self.seed, trial), self.K, self.d)
            self._cache[trial] = (actions, theta)
        return self._cache[trial]

    def environment(self, trial: int) -> LinearEnvironment:
        """One trial: its actions and θ*, with reward noise depending only on (seed, trial)."""
        actions, theta = self.problem(trial)
        return LinearEnvironment(self.info, actions, theta, self.noise_sd, self.seed, trial)

    def describe(self) -> dict[str, float]:
        """Gap statistics of the seed's problem (per-trial values are in policy diagnostics)."""
        means = self.actions @ self.theta  # type: ignore[operator]
        gaps = np.sort(means.max() - means)
        return {
            "noise_sd": float(self.noise_sd),
            "redraw": float(self.redraw),
            "best_mean": float(means.max()),
            "min_gap": float(gaps[1]) if gaps.size > 1 else 0.0,
            "max_gap": float(gaps[-1]),
        }


class LinearEnvironment(FixedActionEnvironment):
    """A fixed action set with Gaussian rewards r = ⟨θ*, a⟩ + σ η (docs/linear.md, "Instance").

    Batched policies use `actions`, `means`, `noise_sd` and `noise_rng()` (a fresh generator on
    the trial's reward stream, identical for every algorithm); `pull` serves round loops.
    """

    def __init__(
        self,
        info: ProblemInfo,
        actions: np.ndarray,
        theta: np.ndarray,
        noise_sd: float,
        seed: int,
        trial: int,
    ) -> None:
        self.info = info
        self.actions = actions
        self.theta = theta
        self.noise_sd = float(noise_sd)
        self.seed = seed
        self.trial = trial
        self.means = actions @ theta
        self.gaps = self.means.max() - self.means
        self._round_noise: np.ndarray | None = None

    @property
    def horizon(self) -> int:
        return self.info.horizon

    def noise_rng(self) -> np.random.Generator:
        """The trial's reward-noise stream, restarted on every call (common random numbers)."""
        return reward_rng(self.seed, self.trial)

    def arms(self, t: int) -> np.ndarray:
        return self.actions

    def pull(self, t: int, index: int) -> tuple[float, float]:
        if self._round_noise is None:
            self._round_noise = self.noise_rng().standard_normal(self.horizon)
        reward = self.means[index] + self.noise_sd * self._round_noise[t]
        return float(reward), float(self.gaps[index])


LINEAR_SPHERE = InstanceKind("linear_sphere", LINEAR_SPHERE_KEYS,
                             lambda keys: LinearInstance(**keys),
                             "K actions and θ* on the unit sphere, Gaussian rewards")
