"""Synthetic arm-pool instance of AdaPrivate-TS (ts spec §1.2): K of n unit arms offered per round.

Per trial the stream `reward_rng(seed, trial)` draws, in this order: θ* ~ N(0, I) rescaled to
‖θ*‖ = S, the n × d pool (N(0, I) rows normalised to ‖x‖ = 1), the T × K candidate table
(K distinct arms uniformly without replacement, in random order) and the T reward uniforms.
With `per_trial: false` θ* and the pool come from `default_rng(seed)` instead and are shared by
every trial. Rewards are r_t = 1[u_t < μ(x)], one uniform per round shared by all algorithms.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from dpbandits.contract import ProblemInfo, RoundEnvironment
from dpbandits.errors import ConfigError
from dpbandits.instances.registry import generator
from dpbandits.links import get_link
from dpbandits.seeding import reward_rng

MEAN_MODELS = ("logistic", "linear")


def draw_theta_and_pool(
    g: np.random.Generator, d: int, n_arms: int, S: float
) -> tuple[np.ndarray, np.ndarray]:
    """θ* ~ N(0, I_d) rescaled to norm S, and n unit-norm arms from normalised N(0, I_d)."""
    theta = g.standard_normal(d)
    theta *= S / np.linalg.norm(theta)
    pool = g.standard_normal((n_arms, d))
    pool /= np.linalg.norm(pool, axis=1, keepdims=True)
    return theta, pool


def pool_means(theta: np.ndarray, pool: np.ndarray, link: str) -> np.ndarray:
    """μ(x) = sigmoid(θ*ᵀx) (logistic), or ½(1 + θ̄ᵀx) with θ̄ = θ*/‖θ*‖ (linear check, §1.2)."""
    if link == "logistic":
        return expit(pool @ theta)
    return 0.5 * (1.0 + pool @ (theta / np.linalg.norm(theta)))


@dataclass
class PoolInstance:
    """Pool-of-arms instance; `environment(trial)` gives every algorithm the same trial."""

    d: int = 20
    n_arms: int = 100
    K: int = 5
    S: float = 2.0
    horizon: int = 10_000
    seed: int = 0
    link: str = "logistic"
    per_trial: bool = True

    def __post_init__(self) -> None:
        for key, value, low in (("d", self.d, 1), ("n_arms", self.n_arms, 1),
                                ("K", self.K, 1), ("horizon", self.horizon, 1),
                                ("seed", self.seed, 0)):
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
                raise ConfigError(f"{key} = {value!r} is not allowed; must be an integer >= {low}")
        if self.K > self.n_arms:
            raise ConfigError(f"K = {self.K!r} is not allowed; must be <= n_arms = {self.n_arms}")
        if not isinstance(self.S, int | float) or not np.isfinite(self.S) or self.S <= 0:
            raise ConfigError(f"S = {self.S!r} is not allowed; must be a finite number > 0")
        if self.link not in MEAN_MODELS:
            raise ConfigError(
                f"link = {self.link!r} is not allowed; allowed: {', '.join(MEAN_MODELS)}"
            )
        if not isinstance(self.per_trial, bool):
            raise ConfigError(f"per_trial = {self.per_trial!r} is not allowed; must be a boolean")
        self._shared = None
        if not self.per_trial:
            self._shared = draw_theta_and_pool(
                np.random.default_rng(self.seed), self.d, self.n_arms, float(self.S)
            )

    @property
    def info(self) -> ProblemInfo:
        """Public description: features in the unit ball, rewards in {0, 1}, ‖θ*‖ = S."""
        kappa = get_link("logistic").kappa_public(self.S) if self.link == "logistic" else 1.0
        return ProblemInfo(
            family=self.link, d=self.d, K=self.K, horizon=self.horizon, S=float(self.S),
            R=1.0, kappa=kappa, kappa_star=4.0 if self.link == "logistic" else 1.0,
            kappa_pub=kappa, kappa_star_pub=4.0 if self.link == "logistic" else 1.0,
        )

    def environment(self, trial: int) -> PoolEnvironment:
        """One trial: θ*, pool (if per trial), candidate table and uniforms from its stream."""
        g = reward_rng(self.seed, trial)
        if self._shared is None:
            theta, pool = draw_theta_and_pool(g, self.d, self.n_arms, float(self.S))
        else:
            theta, pool = self._shared
        candidates = np.argsort(g.random((self.horizon, self.n_arms)), axis=1)[:, : self.K]
        uniforms = g.random(self.horizon)
        return PoolEnvironment(self.info, theta, pool, candidates, uniforms,
                               pool_means(theta, pool, self.link))

    def describe(self) -> dict[str, float]:
        """Scalars recorded with each shard."""
        return {"d": float(self.d), "n_arms": float(self.n_arms), "K": float(self.K),
                "S": float(self.S), "per_trial": float(self.per_trial)}


class PoolEnvironment(RoundEnvironment):
    """Round-by-round view of one trial of a pool instance (pre-drawn tables)."""

    def __init__(self, info: ProblemInfo, theta: np.ndarray, pool: np.ndarray,
                 candidates: np.ndarray, uniforms: np.ndarray, means: np.ndarray) -> None:
        self.info = info
        self.theta = theta
        self.pool = pool
        self.candidates = candidates
        self.uniforms = uniforms
        self.pool_mean = means
        self.contexts = pool[candidates]
        self.means = means[candidates]
        self.best = self.means.max(axis=1)
        self.regrets = self.best[:, None] - self.means
        self.theta0: np.ndarray | None = None

    @property
    def horizon(self) -> int:
        return len(self.uniforms)

    @property
    def sum_best(self) -> float:
        """Σ_t max_a μ_{t,a}: the oracle's expected reward."""
        return float(self.best.sum())

    @property
    def sum_uniform(self) -> float:
        """Σ_t mean_a μ_{t,a}: the expected reward of uniform choice."""
        return float(self.means.mean(axis=1).sum())

    def reference_rewards(self, regret: np.ndarray) -> dict[str, float]:
        """Expected reward Σ μ_{t,a_t} = Σ best − regret and uniform choice's reward (NP%)."""
        return {"expected_reward": self.sum_best - float(regret.sum()),
                "random_reward": self.sum_uniform}

    def arms(self, t: int) -> np.ndarray:
        return self.contexts[t]

    def pull(self, t: int, index: int) -> tuple[float, float]:
        return float(self.uniforms[t] < self.means[t, index]), float(self.regrets[t, index])


@generator("logistic_pool")
def build_logistic_pool(params: dict) -> PoolInstance:
    """Pool instance of ts spec §1.2 from a shard spec's instance mapping."""
    allowed = {"family", "d", "n_arms", "K", "S", "horizon", "seed", "link", "per_trial"}
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ConfigError(
            f"unknown instance key(s) {', '.join(unknown)} for logistic_pool; allowed: "
            f"{', '.join(sorted(allowed))}"
        )
    params = dict(params)
    family = params.pop("family", None)
    if family is not None:
        if family not in MEAN_MODELS:
            raise ConfigError(
                f"family = {family!r} is not allowed; allowed: {', '.join(MEAN_MODELS)}"
            )
        if "link" in params and params["link"] != family:
            raise ConfigError(f"family = {family!r} and link = {params['link']!r} disagree")
        params["link"] = family
    return PoolInstance(**params)
