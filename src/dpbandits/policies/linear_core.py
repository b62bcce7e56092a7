"""Shared machinery of the linear contextual policies of the AdaPrivate-TS paper (ts spec §1, §3).

Ridge statistics A = λI + Σ x xᵀ (lower triangle kept, rank-one BLAS updates) and b = λθ₀ + …;
every round A is factorised afresh (A = LLᵀ, O(d³/3), no inverse formed), so TS draws
ξ = v·L⁻ᵀz ~ N(0, v²A⁻¹) and widths ‖x‖_{A⁻¹} = ‖L⁻¹x‖ cost a triangular solve each.
Features are clipped to the unit ball and rewards to [0, 1] before any statistic uses them.
"""

from __future__ import annotations

import math
import time
from typing import Any, ClassVar

import numpy as np
from scipy.linalg import blas, lapack

from dpbandits.errors import ConfigError
from dpbandits.instances.base import Environment, ProblemInfo
from dpbandits.policies.base import Policy, RunResult
from dpbandits.privacy.zcdp import epsilon_from_rho, rho_from_epsilon, rho_from_epsilon_tight

ZCDP_CONVERSIONS = ("classic", "tight")


class AnyFamily(tuple):
    """Reward families a link-free linear policy accepts: every one (rewards are clipped)."""

    def __contains__(self, item: object) -> bool:
        return isinstance(item, str)


ANY_FAMILY = AnyFamily(("any",))


class NormalStream:
    """Standard normal vectors of length d from one generator, drawn in blocks.

    A block of shape (m, d) holds the same numbers as m successive draws of size d, so the
    stream equals drawing one vector per call; it is only cheaper.
    """

    def __init__(self, rng: np.random.Generator, d: int, block: int) -> None:
        self.rng, self.d, self.block = rng, d, max(1, int(block))
        self.table = np.empty((0, d))
        self.i = 0

    def next(self) -> np.ndarray:
        if self.i >= len(self.table):
            self.table = self.rng.standard_normal((self.block, self.d))
            self.i = 0
        row = self.table[self.i]
        self.i += 1
        return row


def clip_arms(arms: np.ndarray) -> np.ndarray:
    """x ← x / max(1, ‖x‖) row-wise (spec §1.1)."""
    arms = np.asarray(arms, dtype=float)
    norms = np.sqrt(np.einsum("ij,ij->i", arms, arms))
    if norms.max(initial=0.0) > 1.0:
        arms = arms / np.maximum(norms, 1.0)[:, None]
    return arms


def reference_rewards(env: Environment, regret: np.ndarray) -> dict[str, float]:
    """Expected reward Σ μ_{t,a_t} = Σ best − regret and uniform choice's Σ mean_a μ, when the
    environment publishes `sum_best` / `sum_uniform` (the NP% metrics, ts spec §1.3)."""
    out = {}
    best = getattr(env, "sum_best", None)
    if best is not None:
        out["expected_reward"] = float(best) - float(regret.sum())
    uniform = getattr(env, "sum_uniform", None)
    if uniform is not None:
        out["random_reward"] = float(uniform)
    return out


def clip_table(table: np.ndarray) -> np.ndarray:
    """clip_arms applied to every round of a (T, K, d) table at once."""
    table = np.asarray(table, dtype=float)
    norms = np.sqrt(np.einsum("tkj,tkj->tk", table, table))
    if norms.max(initial=0.0) > 1.0:
        table = table / np.maximum(norms, 1.0)[:, :, None]
    return table


def clip_reward(r: float) -> float:
    """r ← min(max(r, 0), 1) (spec §1.1)."""
    return min(max(float(r), 0.0), 1.0)


def cholesky(a: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor from the lower triangle of a (raises if not positive definite)."""
    factor, info = lapack.dpotrf(a, lower=1, clean=0)
    if info != 0:
        raise np.linalg.LinAlgError(f"Cholesky failed (info = {info})")
    return factor


def cho_solve(factor: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A⁻¹b from the lower Cholesky factor of A."""
    out, info = lapack.dpotrs(factor, b, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"Cholesky solve failed (info = {info})")
    return out


def solve_lower_t(factor: np.ndarray, z: np.ndarray) -> np.ndarray:
    """L⁻ᵀz: with z ~ N(0, I) this is a draw from N(0, A⁻¹) (spec §3.2 step 2)."""
    out, info = lapack.dtrtrs(factor, z, lower=1, trans=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"triangular solve failed (info = {info})")
    return out


def widths(factor: np.ndarray, arms: np.ndarray) -> np.ndarray:
    """‖x‖_{A⁻¹} = ‖L⁻¹x‖ for every row x of `arms`."""
    w = blas.dtrsm(1.0, factor, arms.T, lower=1)
    return np.sqrt(np.einsum("ij,ij->j", w, w))


def log_det(factor: np.ndarray) -> float:
    """ln det A = 2 Σ ln L_ii."""
    return 2.0 * float(np.log(np.diagonal(factor)).sum())


def lambda_min(a_lower: np.ndarray) -> float:
    """Smallest eigenvalue of the symmetric matrix whose lower triangle is given (LAPACK dsyevx)."""
    w, _, _, _, info = lapack.dsyevx(a_lower, compute_v=0, range="I", il=1, iu=1, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"eigenvalue computation failed (info = {info})")
    return float(w[0])


def symmetric(a_lower: np.ndarray) -> np.ndarray:
    """Full symmetric matrix from its lower triangle."""
    return np.tril(a_lower) + np.tril(a_lower, -1).T


def zcdp_rho(epsilon: float, delta: float, conversion: str) -> float:
    """ρ for a target (ε, δ): classic inverse (Eq. 2.8, spec §2.1) or dp-accounting's tight one."""
    if conversion == "tight":
        return rho_from_epsilon_tight(epsilon, delta)
    return rho_from_epsilon(epsilon, delta)


def check_number(name: str, value: Any, low: float, *, inclusive: bool = False,
                 high: float | None = None, integer: bool = False) -> None:
    """One ConfigError line unless low < value (≤ if inclusive) [≤ high], finite, int if asked."""
    ok = isinstance(value, int | float | np.number) and not isinstance(value, bool)
    if ok and integer:
        ok = float(value).is_integer()
    if ok:
        v = float(value)
        ok = math.isfinite(v) and (v >= low if inclusive else v > low) and (
            high is None or v <= high)
    if not ok:
        kind = "an integer" if integer else "a finite number"
        rel = ">=" if inclusive else ">"
        rng = f" and <= {high}" if high is not None else ""
        raise ConfigError(f"{name} = {value!r} is not allowed; must be {kind} {rel} {low}{rng}")


class LinearPolicy(Policy):
    """Base of the ridge-regression policies: statistics, warm start, clipping, run loop.

    `theta0` (spec §3.5): None (cold start), a list of d numbers, or "environment" to take the
    public warm-start vector `env.theta0` at the start of `run`. Then b₀ = λθ₀ and A₀ = λI.
    """

    families: ClassVar[AnyFamily] = ANY_FAMILY
    defaults: ClassVar[dict[str, Any]] = {"lam": 1.0, "theta0": None}

    def __init__(self, problem: ProblemInfo, rng: np.random.Generator, **kwargs: Any) -> None:
        super().__init__(problem, rng, **kwargs)
        check_number("lam", self.params["lam"], 0.0)
        self.d = int(problem.d)
        self.lam = float(self.params["lam"])
        self.horizon = int(problem.horizon)
        self.explore_rng, self.noise_rng, self.sample_rng = rng.spawn(3)
        self.theta0 = self._theta0(self.params["theta0"])
        self.reset()

    def _theta0(self, value: Any) -> np.ndarray:
        if value is None:
            return np.zeros(self.d)
        if isinstance(value, str):
            if value != "environment":
                raise ConfigError(f"theta0 = {value!r} is not allowed; must be null, a list of "
                                  f"{self.d} numbers or 'environment'")
            return np.zeros(self.d)
        theta0 = np.asarray(value, dtype=float)
        if theta0.shape != (self.d,) or not np.all(np.isfinite(theta0)):
            raise ConfigError(f"theta0 has shape {theta0.shape}; must be a list of {self.d} "
                              "finite numbers")
        return theta0

    def reset(self) -> None:
        """A = λI, b = λθ₀, then the subclass state."""
        self.A = np.asfortranarray(self.lam * np.eye(self.d))
        self.b = self.lam * self.theta0
        self.t_seen = 0
        block = min(self.horizon, 10_000)
        self.explore_normals = NormalStream(self.explore_rng, self.d, block)
        self.noise_normals = NormalStream(self.noise_rng, self.d, block)
        self.setup()

    def setup(self) -> None:
        """Subclass hook: initialise the policy's own state (called after A, b exist)."""

    def begin(self, env: Environment) -> None:
        """Read the run's horizon and (if asked) the environment's public warm start."""
        self.horizon = int(env.horizon)
        if self.params["theta0"] == "environment":
            theta0 = getattr(env, "theta0", None)
            if theta0 is None:
                raise ConfigError("theta0 = 'environment' but the environment has no theta0")
            self.theta0 = self._theta0(list(np.asarray(theta0, dtype=float)))
        self.reset()

    @property
    def gram(self) -> np.ndarray:
        """The current design matrix A (full symmetric copy)."""
        return symmetric(self.A)

    def add_to_gram(self, x: np.ndarray) -> None:
        """A ← A + x xᵀ (lower triangle, BLAS dsyr in place)."""
        blas.dsyr(1.0, x, lower=1, a=self.A, overwrite_a=1)

    def choose(self, t: int, arms: np.ndarray) -> int:
        raise NotImplementedError

    def observe(self, t: int, x: np.ndarray, r: float) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        """Subclass hook after the last round (final releases, ledger check)."""

    def select(self, t: int, arms: np.ndarray) -> int:
        return self.choose(t, clip_arms(arms))

    def update(self, t: int, x: np.ndarray, r: float) -> None:
        x = clip_arms(np.asarray(x, dtype=float)[None, :])[0]
        self.observe(t, x, clip_reward(r))
        self.t_seen = t + 1

    def run(self, env: Environment) -> RunResult:
        """Play every round of env; the chosen arm's clipped features feed the statistics.

        An environment with a pre-drawn (T, K, d) `contexts` table is clipped once up front.
        """
        self.begin(env)
        horizon = env.horizon
        regret = np.empty(horizon)
        reward = np.empty(horizon)
        start = time.perf_counter()
        pull, choose, observe = env.pull, self.choose, self.observe
        table = getattr(env, "contexts", None)
        if isinstance(table, np.ndarray) and table.ndim == 3 and len(table) >= horizon:
            clipped = clip_table(table[:horizon])
            arms_of = clipped.__getitem__
        else:
            def arms_of(t: int) -> np.ndarray:
                return clip_arms(env.arms(t))
        for t in range(horizon):
            arms = arms_of(t)
            index = int(choose(t, arms))
            r, reg = pull(t, index)
            regret[t] = reg
            reward[t] = r
            observe(t, arms[index], clip_reward(r))
        self.t_seen = horizon
        self.finish()
        wall = time.perf_counter() - start
        diagnostics = self.diagnostics()
        diagnostics.update(reference_rewards(env, regret))
        return RunResult(regret, reward, self.events(), diagnostics, wall)


class ZCDPMixin:
    """ρ from (ε, δ) for the zCDP policies; `conversion` is classic (paper, Eq. 2.8) or tight."""

    def zcdp_setup(self) -> float:
        conversion = self.params["conversion"]  # type: ignore[attr-defined]
        if conversion not in ZCDP_CONVERSIONS:
            raise ConfigError(f"conversion = {conversion!r} is not allowed; allowed: "
                              f"{', '.join(ZCDP_CONVERSIONS)}")
        return zcdp_rho(self.epsilon, self.delta, conversion)  # type: ignore[attr-defined]

    def declare_parallel(self, rho: float, releases: int, what: str) -> None:
        """Total of releases on disjoint rewards: max ρ (parallel composition), then (ε, δ)."""
        ledger = self.ledger  # type: ignore[attr-defined]
        conversion = self.params["conversion"]  # type: ignore[attr-defined]
        if conversion == "tight":
            from dpbandits.privacy.zcdp import epsilon_from_rho_tight

            eps = epsilon_from_rho_tight(rho, self.delta)  # type: ignore[attr-defined]
        else:
            eps = epsilon_from_rho(rho, self.delta)  # type: ignore[attr-defined]
        ledger.declare_total(
            eps, self.delta,  # type: ignore[attr-defined]
            f"parallel composition over {releases} {what} on disjoint rewards: total rho = "
            f"{rho:.6g} ({conversion} conversion)",
        )
        ledger.check()
