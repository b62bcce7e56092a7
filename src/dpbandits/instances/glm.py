"""Synthetic GLM instances: θ* of norm S, K fresh arms per round uniform in the unit ball."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dpbandits.contract import ProblemInfo, RoundEnvironment
from dpbandits.errors import ConfigError
from dpbandits.instances.registry import InstanceKind
from dpbandits.jit import jit
from dpbandits.links import LINKS, Link, get_link
from dpbandits.params import REQUIRED, Declaration, boolean, choice, integer, number, validate
from dpbandits.seeding import reward_rng

GAUSSIAN_NOISE_SD = 1.0
GLM_BALL_KEYS: Declaration = (
    choice("family", REQUIRED, "reward model", tuple(LINKS)),
    integer("d", REQUIRED, "dimension", ge=1),
    integer("K", REQUIRED, "arms per round", ge=1),
    number("S", REQUIRED, "norm bound S of θ*", gt=0),
    integer("horizon", REQUIRED, "rounds T", ge=1),
    integer("seed", REQUIRED, "instance seed (θ* and the contexts)", ge=0),
    boolean("full_norm", True, "‖θ*‖ = S (else S·U with U uniform)"),
    number("noise_sd", GAUSSIAN_NOISE_SD, "noise σ of linear-Gaussian rewards", gt=0),
)
MAX_TABLE_ENTRIES = 10**8  # T·K·d context entries (0.8 GB of float64); the papers need ≤ 1.5e6


@jit
def ball_draws(rng: np.random.Generator, normals: np.ndarray, radii: np.ndarray,
               inv_d: float) -> None:
    """Arm by arm: d normals N(0, 1) into a row of `normals`, then one uniform U(0, 1) whose
    power 1/d is the arm's radius (docs/glm.md, "Instance generator", step 3)."""
    for arm in range(radii.shape[0]):
        for j in range(normals.shape[1]):
            normals[arm, j] = rng.normal(0.0, 1.0)
        radii[arm] = rng.uniform(0.0, 1.0) ** inv_d


def draw_theta_and_contexts(
    seed: int, d: int, K: int, S: float, horizon: int, full_norm: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """θ* and the T×K×d context table in the authors' draw order.

    Steps 1–3 of docs/glm.md, "Instance generator". Each arm takes d normals and then one
    uniform from the same generator, as the authors' per-arm loop draws them (which fixes their
    instance and its κ values): `ball_draws` makes those draws, and each arm is scaled to
    radius U^(1/d) with its norm from `np.vecdot`, which calls the same BLAS dot per row as
    `v @ v`.
    """
    g = np.random.default_rng(seed)
    u = g.uniform(-1.0, 1.0, size=d)
    scale = S if full_norm else S * g.uniform(0.0, 1.0)
    theta = scale * u / np.linalg.norm(u)
    normals = np.empty((horizon * K, d))
    radii = np.empty(horizon * K)
    with g.bit_generator.lock:
        ball_draws(g, normals, radii, 1.0 / d)
    norms = np.sqrt(np.vecdot(normals, normals))
    contexts = radii[:, None] * normals / norms[:, None]
    return theta, contexts.reshape(horizon, K, d)


@dataclass
class GLMInstance:
    """A fixed synthetic GLM instance; `environment(trial)` couples reward noise across policies."""

    family: str
    d: int
    K: int
    S: float
    horizon: int
    seed: int
    full_norm: bool = True
    noise_sd: float = GAUSSIAN_NOISE_SD
    link: Link = field(init=False)
    theta: np.ndarray = field(init=False)
    contexts: np.ndarray = field(init=False)
    means: np.ndarray = field(init=False)
    best: np.ndarray = field(init=False)
    kappa: float = field(init=False)
    kappa_star: float = field(init=False)

    def __post_init__(self) -> None:
        validate("glm_ball", GLM_BALL_KEYS, {k.name: getattr(self, k.name) for k in GLM_BALL_KEYS},
                 kind="instance key")
        if self.horizon * self.K * self.d > MAX_TABLE_ENTRIES:
            raise ConfigError(
                f"horizon × K × d = {self.horizon * self.K * self.d:.3g} is not allowed "
                f"(horizon = {self.horizon}, K = {self.K}, d = {self.d}); the context table "
                f"holds at most {MAX_TABLE_ENTRIES:.0e} entries"
            )
        self.link = get_link(self.family)
        with np.errstate(over="ignore", divide="ignore"):
            kappa_pub = self.link.kappa_public(float(self.S))
        if not np.isfinite(kappa_pub):
            raise ConfigError(f"S = {self.S!r} is not allowed; kappa = 1/mu'(S) overflows for "
                              f"family {self.family}; must be a smaller finite number > 0")
        self.theta, self.contexts = draw_theta_and_contexts(
            self.seed, self.d, self.K, self.S, self.horizon, self.full_norm
        )
        z = self.contexts @ self.theta
        self.means = self.link.mean(z)
        self.best = self.means.max(axis=1)
        dots = self.link.dot(z)
        self.kappa = float(1.0 / dots.min())
        self.kappa_star = float(1.0 / dots.max())

    @property
    def info(self) -> ProblemInfo:
        """Public problem description (instance κ values plus their public bounds)."""
        return ProblemInfo(
            family=self.family,
            d=self.d,
            K=self.K,
            horizon=self.horizon,
            S=float(self.S),
            R=self.noise_sd if self.family == "linear" else self.link.reward_bound,
            kappa=self.kappa,
            kappa_star=self.kappa_star,
            kappa_pub=self.link.kappa_public(self.S),
            kappa_star_pub=self.link.kappa_star_public,
        )

    def reward_table(self, trial: int) -> np.ndarray:
        """Rewards of every (round, arm) for one trial from one shared noise draw."""
        g = reward_rng(self.seed, trial)
        z = self.contexts @ self.theta
        if self.family == "probit":
            return (z + g.standard_normal(z.shape) > 0).astype(float)
        if self.family == "logistic":
            return (g.uniform(0.0, 1.0, z.shape) < self.means).astype(float)
        return z + self.noise_sd * g.standard_normal(z.shape)

    def environment(self, trial: int) -> GLMEnvironment:
        """The environment of one trial: same θ* and contexts, trial-specific reward noise."""
        return GLMEnvironment(self, self.reward_table(trial))


class GLMEnvironment(RoundEnvironment):
    """Round-by-round view of a GLM instance with a pre-drawn reward table."""

    def __init__(self, instance: GLMInstance, rewards: np.ndarray) -> None:
        self.instance = instance
        self.info = instance.info
        self.rewards = rewards
        self.regrets = instance.best[:, None] - instance.means
        self.contexts = instance.contexts

    @property
    def horizon(self) -> int:
        return self.instance.horizon

    def arms(self, t: int) -> np.ndarray:
        return self.instance.contexts[t]

    def pull(self, t: int, index: int) -> tuple[float, float]:
        return float(self.rewards[t, index]), float(self.regrets[t, index])

    def outcome_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """The reward table and every pull's regret, as `pull` gives them."""
        return (np.ascontiguousarray(self.rewards, dtype=float),
                np.ascontiguousarray(self.regrets, dtype=float))


def _describe(instance: GLMInstance) -> dict[str, float]:
    return {
        "S": float(instance.S),
        "kappa": instance.kappa,
        "kappa_star": instance.kappa_star,
        "sum_best": float(instance.best.sum()),
    }


GLMInstance.describe = _describe  # type: ignore[attr-defined]


GLM_BALL = InstanceKind("glm_ball", GLM_BALL_KEYS, lambda keys: GLMInstance(**keys),
                        "θ* of norm S, K fresh contexts per round uniform in the unit ball")
