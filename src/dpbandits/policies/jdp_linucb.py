"""JDP-LinUCB (Shariff & Sheffet 2018), Gaussian tree variant (docs/ts.md, "JDP-LinUCB").

The prefix sums of z zᵀ, z = [x; r], are released by binary-tree aggregation with symmetric node
noise (off-diagonal variance σ_n², σ_n² = 16 m L̃⁴ ln(4/δ)²/ε², L̃ = √2) and shifted by 2Υ·I,
Υ = σ_n√(2m)(4√d + 2 ln(2T/α_f)). V_t = λI + Ñ[:d, :d], u_t = Ñ[:d, d], θ̂ = V_t⁻¹u_t.
The guarantee is joint DP (contexts private too), not the event-level model of the others.
"""

from __future__ import annotations

import functools
import math
from typing import Any, ClassVar

import numpy as np

from dpbandits.audit.spec import SMALL_POOL, UNIT_NORMS, PolicyAudit
from dpbandits.contract import Environment, OutcomeTables, ProblemInfo
from dpbandits.errors import ConfigError
from dpbandits.jit import jit
from dpbandits.linalg import cho_solve, cho_solve_into, cholesky, cholesky_into
from dpbandits.params import Declaration, number
from dpbandits.policies.linear_core import ALPHA, LinearPolicy, ucb_index
from dpbandits.policies.tables import pull, select_update_round
from dpbandits.privacy.clipping import clip_reward
from dpbandits.privacy.grid import snap
from dpbandits.privacy.release import recording_active
from dpbandits.privacy.tree import MatrixTree, cover_nodes, tree_height, tree_rho

L_TILDE = math.sqrt(2.0)
EIGEN_FLOOR = 1e-6
NOISE_BLOCK = 256  # rounds of compiled play whose node noises are drawn ahead at once


@functools.lru_cache(maxsize=4)
def cover_table(horizon: int, height: int) -> np.ndarray:
    """Row c: the dyadic cover of leaves [1, c] (`cover_nodes`, in its order), padded with 0,
    for c = 0 … horizon."""
    table = np.zeros((horizon + 1, height), dtype=np.int64)
    for count in range(1, horizon + 1):
        nodes = cover_nodes(count, height)
        table[count, :len(nodes)] = nodes
    table.flags.writeable = False
    return table


@jit
def cover_sum(noises: np.ndarray, slots: np.ndarray, out: np.ndarray) -> None:
    """out = Σ noises[k] over the slots k ≥ 0 of a cover, added from zero in its order: the
    tree noise Σ_{cover(c)} Z_node of the release at count c."""
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = 0.0
    for k in slots:
        if k >= 0:
            noise = noises[k]
            for i in range(out.shape[0]):
                for j in range(out.shape[1]):
                    out[i, j] += noise[i, j]


@jit
def jdp_estimate(prefix: np.ndarray, noise: np.ndarray, base: np.ndarray,
                 lam_theta0: np.ndarray, released: np.ndarray, factor: np.ndarray,
                 theta: np.ndarray) -> bool:
    """The tree release Ñ = prefix + noise into `released`; V_t = base + Ñ[:d, :d] factorised
    into `factor` and θ̂_t = V_t⁻¹(Ñ[:d, d] + λθ₀) into `theta`; False (and neither written)
    where V_t is not positive definite."""
    d = base.shape[0]
    for i in range(released.shape[0]):
        for j in range(released.shape[1]):
            released[i, j] = prefix[i, j] + noise[i, j]
    v = np.empty((d, d))
    for i in range(d):
        for j in range(d):
            v[i, j] = base[i, j] + released[i, j]
    if not cholesky_into(v, factor):
        return False
    u = np.empty(d)
    for i in range(d):
        u[i] = released[i, d] + lam_theta0[i]
    cho_solve_into(factor, u, np.empty(d), theta)
    return True


@jit
def jdp_arm(factor: np.ndarray, theta: np.ndarray, alpha: float, arms: np.ndarray) -> int:
    """JDP-LinUCB's action: argmax_x xᵀθ̂_t + α‖x‖_{V_t⁻¹} on the tree release (Shariff &
    Sheffet 2018, Alg. 1)."""
    return ucb_index(arms, theta, factor, alpha)


@jit
def jdp_update(prefix: np.ndarray, z: np.ndarray, leaf: np.ndarray, x: np.ndarray, r: float,
               grid: float) -> None:
    """The leaf z zᵀ, z = [x; r], on the grid γ of the tree's exact noise (γ > 0, as
    `MatrixTree.snap` puts it), added to the tree's prefix sum."""
    d = x.shape[0]
    for i in range(d):
        z[i] = x[i]
    z[d] = r
    for i in range(z.shape[0]):
        for j in range(z.shape[0]):
            leaf[i, j] = z[i] * z[j]
            if grid > 0.0:
                leaf[i, j] = snap(leaf[i, j], grid)
            prefix[i, j] += leaf[i, j]


@jit
def jdp_rounds(prefix: np.ndarray, noise: np.ndarray, base: np.ndarray,
               lam_theta0: np.ndarray, released: np.ndarray, factor: np.ndarray,
               theta: np.ndarray, z: np.ndarray, leaf: np.ndarray, alpha: float, grid: float,
               noises: np.ndarray, slots: np.ndarray, start: int, tables: OutcomeTables,
               t: int, stop: int) -> int:
    """Rounds t … stop − 1 of JDP-LinUCB on pre-drawn tables, the cover of count u being
    slots[u − start] into `noises`; returns `stop`, or the round before which V_t must be
    floored (its tree noise in `noise`)."""
    for u in range(t, stop):
        cover_sum(noises, slots[u - start], noise)
        if not jdp_estimate(prefix, noise, base, lam_theta0, released, factor, theta):
            return u
        arms = tables.arms[u]
        i = jdp_arm(factor, theta, alpha, arms)
        jdp_update(prefix, z, leaf, arms[i], clip_reward(pull(tables, u, i)), grid)
    return stop


def jdp_sigma(epsilon: float, delta: float, horizon: int) -> float:
    """σ_n = √(16 m L̃⁴ ln(4/δ)²/ε²) with m = ⌈log₂T⌉ + 1 (Shariff & Sheffet, Sec. 4.2)."""
    m = tree_height(horizon)
    return math.sqrt(16.0 * m * L_TILDE**4 * math.log(4.0 / delta) ** 2 / epsilon**2)


def jdp_shift(sigma_n: float, d: int, horizon: int, alpha_f: float) -> float:
    """Υ = σ_n√(2m)(4√d + 2 ln(2T/α_f)) (Shariff & Sheffet, Sec. 4.2); the regulariser adds 2Υ·I."""
    m = tree_height(horizon)
    return sigma_n * math.sqrt(2.0 * m) * (4.0 * math.sqrt(d) + 2.0 * math.log(2.0 * horizon
                                                                            / alpha_f))


class JDPLinUCB(LinearPolicy):
    """UCB on the tree-released, shifted Gram matrix: xᵀθ̂_t + α‖x‖_{V_t⁻¹} (paper mode)."""

    name = "JDP-LinUCB"
    plays_tables = True
    decision_rule = staticmethod(jdp_arm)
    update_rule = staticmethod(jdp_update)
    audits: ClassVar[tuple[PolicyAudit, ...]] = (PolicyAudit(
        name="JDP-LinUCB@context", policy=name, instance=SMALL_POOL, pair="context",
        arm_norms=UNIT_NORMS, rewards=(1.0, 0.0), default_runs=400),)
    private = True
    parameters: ClassVar[Declaration] = (
        *LinearPolicy.parameters, ALPHA,
        number("alpha_f", 0.05, "failure probability α_f of the shift Υ", gt=0, le=1),
    )

    def __init__(self, problem: ProblemInfo, rng: np.random.Generator, **kwargs: Any) -> None:
        super().__init__(problem, rng, **kwargs)
        self.alpha = float(self.params["alpha"])
        self.calibrate()
        self.reset()

    def calibrate(self) -> None:
        """σ_n and Υ for the current horizon."""
        try:
            self.sigma_n = jdp_sigma(float(self.epsilon), float(self.delta), self.horizon)
            self.upsilon = jdp_shift(self.sigma_n, self.d, self.horizon,
                                     float(self.params["alpha_f"]))
        except (OverflowError, ZeroDivisionError):
            raise ConfigError(f"epsilon = {self.epsilon!r} is not allowed for {self.name}; its "
                              "noise scale sigma_n = 4 sqrt(m) L^2 ln(4/delta)/epsilon must be a "
                              "finite number > 0") from None

    def begin(self, env: Environment) -> None:
        self.horizon = int(env.horizon)
        self.calibrate()
        super().begin(env)

    def setup(self) -> None:
        if not hasattr(self, "sigma_n"):
            return
        # MatrixTree's node noise (G + Gᵀ)/2 has off-diagonal variance σ²/2: σ = √2·σ_n.
        self.tree = MatrixTree(self.horizon, self.d + 1, math.sqrt(2.0) * self.sigma_n,
                               self.noise_rng, shift=2.0 * self.upsilon, noise=self.noise)
        self.floor_events = 0
        size = self.d + 1
        self.prefix = np.zeros((size, size))  # Σ of the (snapped) leaves z zᵀ
        self.tree_noise = np.zeros((size, size))  # Σ_{cover(count)} Z_node
        self.released_work = np.empty((size, size))  # the release Ñ = prefix + tree noise
        self.base = (self.lam + 2.0 * self.upsilon) * np.eye(self.d)
        self.lam_theta0 = self.lam * self.theta0
        self.z = np.empty(size)  # [x; r] of the current leaf
        self.leaf = np.empty((size, size))
        self.factor_work = np.empty((self.d, self.d))  # the factor of V_t
        self.theta = np.zeros(self.d)  # θ̂_t
        exact = self.tree.exact and self.tree.sigma_node > 0
        self.leaf_grid = self.noise.grid(self.tree.sigma_node) if exact else 0.0
        self.estimated = -1  # the count whose release the factor and θ̂ are of
        self.floored = False

    @property
    def cover(self) -> set[int]:
        return set(self.tree.cover())

    @property
    def released_sum(self) -> np.ndarray:
        """The tree's release without shift: prefix sum + Σ_{cover(count)} Z_node."""
        return self.prefix + self.tree_noise

    def refresh_noise(self) -> None:
        """The tree noise of the current count's cover (its new node drawn by the tree)."""
        nodes = self.tree.cover()
        slots = np.arange(len(nodes), dtype=np.int64)
        cover_sum(self.tree.node_noises(nodes), slots, self.tree_noise)

    def released(self) -> tuple[np.ndarray, np.ndarray]:
        """(V_t, u_t) = (λI + 2ΥI + Ñ[:d, :d], Ñ[:d, d] + λθ₀) from the tree release."""
        d, released = self.d, self.released_sum
        return self.base + released[:d, :d], released[:d, d] + self.lam_theta0

    def estimate(self) -> None:
        """The factor of V_t and θ̂_t = V_t⁻¹u_t, once per release; V_t floored at its
        eigenvalues (EIGEN_FLOOR) where it is not positive definite."""
        self.floored = not jdp_estimate(self.prefix, self.tree_noise, self.base,
                                        self.lam_theta0, self.released_work, self.factor_work,
                                        self.theta)
        if self.floored:
            v, u = self.released()
            vals, vecs = np.linalg.eigh(v)
            v = (vecs * np.maximum(vals, EIGEN_FLOOR)) @ vecs.T
            self.factor_work = cholesky(np.ascontiguousarray(v))
            self.theta = cho_solve(self.factor_work, np.ascontiguousarray(u))
        self.estimated = self.tree.count

    def choose(self, t: int, arms: np.ndarray) -> int:
        if self.estimated != self.tree.count:
            self.estimate()
        if self.floored:  # counted on every query of a floored release, replays included
            self.floor_events += 1
        return jdp_arm(self.factor_work, self.theta, self.alpha, arms)

    def observe(self, t: int, x: np.ndarray, r: float) -> None:
        jdp_update(self.prefix, self.z, self.leaf, x, r, self.leaf_grid)
        self.tree.update(None)
        self.refresh_noise()
        if recording_active() and self.tree.release_node(
                self.noise, self.prefix, name="tree node", sensitivity=self.leaf_sensitivity(),
                entry=None):
            self.refresh_noise()  # replaying: the node's noise is the replayed release's

    def leaf_sensitivity(self) -> float:
        """Δ of a node: a user's leaf z zᵀ (‖z‖² ≤ L̃² = 2) moves by ≤ √2·L̃² = 2√2 in
        Frobenius norm (Shariff & Sheffet 2018, Sec. 4.2), plus the grid rounding of exact
        noise (γ per entry of the (d + 1)² leaf)."""
        leaf = 2.0 * math.sqrt(2.0) * (L_TILDE / math.sqrt(2.0)) ** 2  # 2√2 exactly at L̃ = √2
        return leaf + self.noise.grid(self.tree.sigma_node) * (self.d + 1)

    def noise_block(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """(noises, slots) of the releases at counts start … stop − 1: the distinct nodes of
        their covers, in the order they first appear (the nodes joining in the block drawn
        now, in the order the rounds would draw them), and per count its cover as indices
        into them (−1: none)."""
        covers = cover_table(self.horizon, self.tree.height)[start:stop]
        flat = covers.ravel()
        used = flat > 0
        nodes, first, inverse = np.unique(flat[used], return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # nodes by first appearance
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        slots = np.full(flat.shape, -1, dtype=np.int64)
        slots[used] = rank[inverse]
        return self.tree.node_noises(nodes[order].tolist()), slots.reshape(covers.shape)

    def play_table(self, tables: OutcomeTables) -> None:
        """Compiled rounds (`jdp_rounds`) a block of node noises at a time; a round whose V_t
        must be floored is played by `choose` and `observe`."""
        t, horizon = 0, len(tables.chosen)
        while t < horizon:
            start, stop = t, min(horizon, t + NOISE_BLOCK)
            noises, slots = self.noise_block(start, stop)
            while t < stop:
                played = jdp_rounds(self.prefix, self.tree_noise, self.base, self.lam_theta0,
                                    self.released_work, self.factor_work, self.theta, self.z,
                                    self.leaf, self.alpha, self.leaf_grid, noises, slots,
                                    start, tables, t, stop)
                for _ in range(played - t):
                    self.tree.update(None)
                t = played
                if t < stop:
                    select_update_round(self, tables, t)
                    t += 1
        self.refresh_noise()
        self.estimated = -1

    def finish(self) -> None:
        """The tree's actual zCDP: a user's leaf z zᵀ (‖z‖² ≤ 2) moves by ≤ 2√2 in Frobenius
        norm on each of the m nodes above it, each with isotropic (Frobenius) noise σ_node."""
        tree = self.tree
        sensitivity = self.leaf_sensitivity()
        scale = tree.drawn(self.noise, sensitivity).scale  # the σ the node sampler draws at
        rho = tree_rho(scale, sensitivity, self.horizon)
        self.ledger.add(
            "tree-gaussian (zCDP)", "prefix sums of [x; r][x; r]^T", sensitivity=sensitivity,
            noise_scale=scale, rho=rho,
            note=f"joint DP; calibrated as Shariff & Sheffet 2018 (sigma_n = "
                 f"{self.sigma_n:.6g}); m = {tree.height} levels; shift 2*Upsilon = "
                 f"{2 * self.upsilon:.6g}",
        )

    def diagnostics(self) -> dict[str, float]:
        return {"sigma_n": self.sigma_n, "upsilon": self.upsilon,
                "floor_events": float(self.floor_events)}
