"""Synthetic arm-pool instance of AdaPrivate-TS: K of n unit arms offered per round.

Per trial the stream `reward_rng(seed, trial)` draws, in this order: θ* ~ N(0, I) rescaled to
‖θ*‖ = S, the n × d pool (N(0, I) rows normalised to ‖x‖ = 1), the T × K candidate table
(K distinct arms uniformly without replacement, in random order) and the T reward uniforms.
With `per_trial: false` θ* and the pool come from `default_rng(seed)` instead and are shared by
every trial. Rewards are r_t = 1[u_t < μ(x)], one uniform per round shared by all algorithms.
The paper's synthetic setup; the choices it leaves open: docs/ts.md, "Synthetic environment".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from dpbandits.contract import ProblemInfo, RoundEnvironment
from dpbandits.errors import ConfigError
from dpbandits.instances.registry import InstanceKind
from dpbandits.links import get_link
from dpbandits.params import Declaration, boolean, choice, integer, number, validate
from dpbandits.run_cache import cached_arrays
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


def smallest_first(u: np.ndarray, k: int) -> np.ndarray:
    """`np.argsort(u, axis=1)[:, :k]` by k argmin passes; overwrites u's k smallest per row."""
    # One more pass checks that each row's k + 1 smallest are distinct, so that their order is
    # unique; rows where they are not are sorted in full.
    n_rows, n_cols = u.shape
    if k >= n_cols:
        return np.argsort(u, axis=1)[:, :k]
    rows = np.arange(n_rows)
    out = np.empty((n_rows, k), dtype=np.intp)
    taken = np.empty((n_rows, k))
    distinct = np.ones(n_rows, dtype=bool)
    previous = None
    for j in range(k + 1):
        index = u.argmin(axis=1)
        values = u[rows, index]
        if previous is not None:
            distinct &= values > previous
        if j < k:
            out[:, j] = index
            taken[:, j] = values
            u[rows, index] = np.inf
        previous = values
    if not distinct.all():
        redo = np.flatnonzero(~distinct)
        u[redo[:, None], out[redo]] = taken[redo]
        out[redo] = np.argsort(u[redo], axis=1)[:, :k]
    return out


def pool_means(theta: np.ndarray, pool: np.ndarray, link: str) -> np.ndarray:
    """μ(x) = sigmoid(θ*ᵀx) (logistic), or ½(1 + θ̄ᵀx) with θ̄ = θ*/‖θ*‖ (linear).

    The linear form is our reconstruction of the paper's "purely linear environment".
    """
    if link == "logistic":
        return get_link("logistic").mean(pool @ theta)
    return 0.5 * (1.0 + pool @ (theta / np.linalg.norm(theta)))


LOGISTIC_POOL_KEYS: Declaration = (
    integer("d", 20, "dimension", ge=1),
    integer("n_arms", 100, "pool size", ge=1),
    integer("K", 5, "arms offered per round", ge=1),
    number("S", 2.0, "‖θ*‖", gt=0),
    integer("horizon", 10_000, "rounds T", ge=1),
    integer("seed", 0, "instance seed", ge=0),
    choice("link", None, "mean model (null: logistic)", MEAN_MODELS, nullable=True),
    choice("family", None, "another name for link", MEAN_MODELS, nullable=True),
    boolean("per_trial", True, "every trial draws its own θ* and pool"),
)


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
        validate("logistic_pool", LOGISTIC_POOL_KEYS[:7] + LOGISTIC_POOL_KEYS[8:],
                 {k: getattr(self, k) for k in ("d", "n_arms", "K", "S", "horizon", "seed",
                                                "link", "per_trial")}, kind="instance key")
        if self.K > self.n_arms:
            raise ConfigError(f"K = {self.K!r} is not allowed; must be <= n_arms = {self.n_arms}")
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
        """One trial: θ*, pool (if per trial), candidate table and uniforms from its stream,
        drawn once per run for all the run's algorithms (dpbandits.run_cache)."""
        layout = {"theta": ((self.d,), np.float64), "pool": ((self.n_arms, self.d), np.float64),
                  "candidates": ((self.horizon, self.K), np.intp),
                  "uniforms": ((self.horizon,), np.float64)}
        drawn = cached_arrays("pool_environment", {**asdict(self), "trial": int(trial)}, layout,
                              lambda: self.draw(trial))
        theta, pool = drawn["theta"], drawn["pool"]
        return PoolEnvironment(self.info, theta, pool, drawn["candidates"], drawn["uniforms"],
                               pool_means(theta, pool, self.link))

    def draw(self, trial: int) -> dict[str, np.ndarray]:
        """The trial's draws from its stream `reward_rng(seed, trial)`, in the order above."""
        g = reward_rng(self.seed, trial)
        if self._shared is None:
            theta, pool = draw_theta_and_pool(g, self.d, self.n_arms, float(self.S))
        else:
            theta, pool = self._shared
        candidates = smallest_first(g.random((self.horizon, self.n_arms)), self.K)
        return {"theta": theta, "pool": pool, "candidates": candidates,
                "uniforms": g.random(self.horizon)}

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
        return (float(self.uniforms.item(t) < self.means.item(t, index)),
                self.regrets.item(t, index))

    def outcome_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """Every pull's reward 1{u_t < μ_{t,a}} and regret, as `pull` gives them."""
        rewards = (self.uniforms[:, None] < self.means).astype(float)
        return rewards, np.ascontiguousarray(self.regrets, dtype=float)


def _build_pool(keys: dict) -> PoolInstance:
    """`family` is another name for `link`; both may be given only if they agree."""
    keys = dict(keys)
    family, link = keys.pop("family"), keys.pop("link")
    if family is not None and link is not None and family != link:
        raise ConfigError(f"family = {family!r} and link = {link!r} disagree")
    return PoolInstance(**keys, link=family or link or "logistic")


LOGISTIC_POOL = InstanceKind("logistic_pool", LOGISTIC_POOL_KEYS, _build_pool,
                             "a pool of unit arms, K offered per round, θ* of norm S")
