"""JDP-LinUCB (Shariff & Sheffet 2018), Gaussian tree variant (docs/ts.md, "JDP-LinUCB").

The prefix sums of z zᵀ, z = [x; r], are released by binary-tree aggregation with symmetric node
noise (off-diagonal variance σ_n², σ_n² = 16 m L̃⁴ ln(4/δ)²/ε², L̃ = √2) and shifted by 2Υ·I,
Υ = σ_n√(2m)(4√d + 2 ln(2T/α_f)). V_t = λI + Ñ[:d, :d], u_t = Ñ[:d, d], θ̂ = V_t⁻¹u_t.
The guarantee is joint DP (contexts private too), not the event-level model of the others.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, NamedTuple

import numpy as np

from dpbandits.audit.spec import SMALL_POOL, UNIT_NORMS, PolicyAudit
from dpbandits.contract import Environment, OutcomeTables, ProblemInfo
from dpbandits.errors import ConfigError
from dpbandits.linalg import cho_solve
from dpbandits.params import Declaration, number
from dpbandits.policies.linear_core import (
    ALPHA,
    SNAP_LIMIT,
    LinearPolicy,
    ucb_index,
)
from dpbandits.policies.ridge_rounds import AT_STOP, FLOOR, finish_round, play_tree
from dpbandits.privacy.tree import MatrixTree, cover_nodes, tree_height, tree_rho
from dpbandits.scipy_kernels import lapack

L_TILDE = math.sqrt(2.0)
EIGEN_FLOOR = 1e-6
NOISE_BLOCK = 256  # rounds of compiled play whose node noises are drawn ahead at once


class NoisePlan(NamedTuple):
    """What `advance_noise` does after each of a block of rounds: the node noises it adds or
    removes (`noises`), round i's operations ops[offsets[i]:offsets[i + 1]], each 2k + 1 (add
    noises[k]) or 2k (subtract it), and per round the nodes removed and added (None for a
    cover kept in the order its nodes joined, which `follow` rebuilds)."""

    noises: np.ndarray
    ops: np.ndarray
    offsets: np.ndarray
    steps: list[tuple[list[int], list[int]]] | None

    def rest(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(noises, ops, offsets) of the plan's rounds from its i-th on."""
        first = self.offsets[i]
        return self.noises, self.ops[first:], self.offsets[i:] - first


def _joining_node(count: int, first_leaf: int) -> int:
    """The node that joins the dyadic cover of leaves [1, count − 1] to make that of [1, count]:
    the one whose leaves end at leaf count, 2^j of them for j trailing zero bits of count."""
    return (first_leaf + count - 1) >> ((count & -count).bit_length() - 1)


def _joined_order(count: int, height: int) -> list[int]:
    """The dyadic cover of leaves [1, count] in the order its nodes joined it, one a round:
    largest first (`cover_nodes` lists it smallest first)."""
    return cover_nodes(count, height)[::-1]


def _dyadic_ops(start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ops, offsets, left) of rounds start … stop − 1 on a dyadic cover kept in joined order
    (`_joined_order`), as `advance_noise` changes it: at count c the j = ctz(c) nodes that
    joined at counts c − 2^(j−1), …, c − 2, c − 1 leave, largest first, and c's joining node
    comes in. Round i's new node is slot i; a node that joined at count e ≤ start, before the
    block, is slot (stop − start) + k for the k-th such node to leave, and `left` lists those e
    in that order."""
    rounds = stop - start
    counts = np.arange(start + 1, stop + 1, dtype=np.int64)
    leaving = np.frexp((counts & -counts).astype(float))[1] - 1  # ctz(c), exact: powers of 2
    offsets = np.zeros(rounds + 1, dtype=np.int64)
    np.cumsum(leaving + 1, out=offsets[1:])
    of_round = np.repeat(np.arange(rounds), leaving)
    first_gone = np.zeros(rounds, dtype=np.int64)
    np.cumsum(leaving[:-1], out=first_gone[1:])
    k = leaving[of_round] - 1 - (np.arange(len(of_round)) - first_gone[of_round])
    joined_at = counts[of_round] - (np.int64(1) << k)
    slots = joined_at - (start + 1)
    before = joined_at <= start
    slots[before] = rounds + np.arange(np.count_nonzero(before))
    ops = np.empty(offsets[-1], dtype=np.int64)
    adds = np.zeros(offsets[-1], dtype=bool)
    adds[offsets[1:] - 1] = True
    ops[adds] = 2 * np.arange(rounds) + 1
    ops[~adds] = 2 * slots
    return ops, offsets, joined_at[before]


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
        self.released_sum = np.zeros((self.d + 1, self.d + 1))  # prefix sum + tree noise
        self.node_noise: dict[int, np.ndarray] = {}
        self.base = (self.lam + 2.0 * self.upsilon) * np.eye(self.d)
        self.lam_theta0 = self.lam * self.theta0
        self.z = np.empty(self.d + 1)  # [x; r] of the current leaf
        self.leaf = np.empty((self.d + 1, self.d + 1))
        self.v_work = np.empty((self.d, self.d), order="F")  # V_t, then its factor
        exact = self.tree.exact and self.tree.sigma_node > 0
        self.leaf_grid = self.noise.grid(self.tree.sigma_node) if exact else 0.0
        self.current: tuple[int, np.ndarray, np.ndarray, bool] | None = None

    @property
    def cover(self) -> set[int]:
        return set(self.node_noise)

    @property
    def tree_noise(self) -> np.ndarray:
        """Tree noise of the current release: Σ_{cover(c)} Z_node."""
        total = np.zeros((self.d + 1, self.d + 1))
        for z in self.node_noise.values():
            total += z
        return total

    def advance_noise(self) -> None:
        """Keep Σ_{cover(c)} Z_node incrementally: on each insertion the newly closed node's
        noise (drawn once by the tree) is added and the nodes it replaces are removed, so the
        release equals the tree's own."""
        cover = self.tree.cover()
        for node in [n for n in self.node_noise if n not in cover]:
            self.released_sum -= self.node_noise.pop(node)
        for node in sorted(n for n in cover if n not in self.node_noise):
            z = self.node_noise[node] = self.tree.node_noise(node)
            self.released_sum += z

    def released(self) -> tuple[np.ndarray, np.ndarray]:
        """(V_t, u_t) = (λI + 2ΥI + Ñ[:d, :d], Ñ[:d, d] + λθ₀) from the tree release."""
        d = self.d
        v = np.asfortranarray(self.base + self.released_sum[:d, :d])
        return v, self.released_sum[:d, d] + self.lam_theta0

    def choose(self, t: int, arms: np.ndarray) -> int:
        current = self.current
        if current is None or current[0] != self.tree.count:
            current = self.current = (self.tree.count, *self.estimate())
        _, factor, theta, floored = current
        if floored:  # counted on every query of a floored release, replays included
            self.floor_events += 1
        return ucb_index(arms, theta, factor, self.alpha)

    def estimate(self) -> tuple[np.ndarray, np.ndarray, bool]:
        """(factor of V_t, θ̂_t = V_t⁻¹u_t, whether V_t was floored), once per release."""
        d = self.d
        # V_t as `released` builds it, factorised in place in a work array
        v = np.add(self.base, self.released_sum[:d, :d], out=self.v_work)
        factor, info = lapack.dpotrf(v, 1, 0, 1)
        floored = info != 0
        if floored:
            v = self.released()[0]
            vals, vecs = np.linalg.eigh(v)
            v = np.asfortranarray((vecs * np.maximum(vals, EIGEN_FLOOR)) @ vecs.T)
            factor, info = lapack.dpotrf(v, lower=1, clean=0)
        return factor, cho_solve(factor, self.released_sum[:d, d] + self.lam_theta0), floored

    def noise_plan(self, start: int, stop: int) -> NoisePlan:
        """`advance_noise` after rounds start … stop − 1, its new nodes' noises drawn now, in
        the order it draws them (nothing else draws from the tree's generator)."""
        first_leaf = 1 << (self.tree.height - 1)
        held = list(self.node_noise)  # the cover in the order `advance_noise` keeps it
        if held == _joined_order(start, self.tree.height) and stop > start:
            ops, offsets, left = _dyadic_ops(start, stop)
            noises = self.tree.node_noises([_joining_node(count, first_leaf)
                                            for count in range(start + 1, stop + 1)])
            if len(left):
                noises = np.concatenate([noises, [self.node_noise[_joining_node(int(count),
                                                                                 first_leaf)]
                                                  for count in left]])
            return NoisePlan(noises, ops, offsets, None)
        slots: dict[int, int] = {}
        noises: list[np.ndarray] = []
        ops: list[int] = []
        offsets, steps = [0], []

        def slot(node: int, noise: np.ndarray) -> int:
            if node not in slots:
                slots[node] = len(noises)
                noises.append(noise)
            return slots[node]

        for count in range(start + 1, stop + 1):  # a cover in another order: round by round
            cover = cover_nodes(count, self.tree.height)
            gone = [n for n in held if n not in cover]
            new = sorted(n for n in cover if n not in held)
            for node in gone:
                held.remove(node)
                ops.append(2 * slot(node, self.node_noise.get(node)))  # type: ignore[arg-type]
            for node in new:
                held.append(node)
                ops.append(2 * slot(node, self.tree.node_noise(node)) + 1)
            offsets.append(len(ops))
            steps.append((gone, new))
        size = self.d + 1
        stacked = np.stack(noises) if noises else np.empty((0, size, size))
        return NoisePlan(stacked, np.array(ops, dtype=np.int64),
                         np.array(offsets, dtype=np.int64), steps)

    def follow(self, plan: NoisePlan, first: int, stop: int) -> None:
        """The tree's count and the cover's noises after the plan's rounds first … stop − 1,
        whose leaves and node noises compiled rounds added to the release."""
        if plan.steps is None:
            for _ in range(first, stop):
                self.tree.update(None)
            if stop > first:
                self.node_noise = {node: self.tree.node_noise(node) for node in
                                   _joined_order(self.tree.count, self.tree.height)}
        else:
            for gone, new in plan.steps[first:stop]:
                for node in gone:
                    del self.node_noise[node]
                for node in new:
                    self.node_noise[node] = self.tree.node_noise(node)
                self.tree.update(None)
        self.current = None

    def play_table(self, tables: OutcomeTables) -> None:
        """Compiled rounds (`ridge_rounds.play_tree`) a block of node noises at a time. Where
        V_t must be floored, `choose` picks round t's arm; there, and where the compiled loop
        picked it but the leaf needs the tree's snap, `observe` takes round t."""
        t, theta, generator = 0, np.empty(self.d), self.tree.rng.bit_generator
        while t < self.horizon:
            start, stop = t, min(self.horizon, t + NOISE_BLOCK)
            plan = self.noise_plan(start, stop)
            drawn = generator.state
            while t < stop:
                played, why = play_tree(self, tables, t, stop, plan.rest(t - start), theta)
                self.follow(plan, t - start, played - start)
                t = played
                if why == AT_STOP:
                    break
                index = self.choose(t, tables.arms[t]) if why == FLOOR else int(tables.chosen[t])
                finish_round(self, tables, t, index)
                t += 1
            if generator.state != drawn:  # noises were drawn ahead: nothing else may draw
                raise RuntimeError("JDP-LinUCB: the tree's generator was drawn from during "
                                   "compiled rounds; their noises would not be the round loop's")

    def observe(self, t: int, x: np.ndarray, r: float) -> None:
        z, leaf, grid = self.z, self.leaf, self.leaf_grid
        z[:-1] = x
        z[-1] = r
        np.multiply(z[:, None], z[None, :], out=leaf)  # np.outer(z, z)
        top = np.abs(z).max()
        if grid and top * top < SNAP_LIMIT * grid:  # the tree's snap, grid found once
            leaf /= grid
            np.rint(leaf, out=leaf)
            leaf *= grid
            self.released_sum += leaf
        else:
            self.released_sum += self.tree.snap(leaf)
        self.tree.update(None)
        self.advance_noise()

    def finish(self) -> None:
        """The tree's actual zCDP: a user's leaf z zᵀ (‖z‖² ≤ 2) moves by ≤ 2√2 in Frobenius
        norm on each of the m nodes above it, each with isotropic (Frobenius) noise σ_node."""
        tree = self.tree
        sensitivity = 2.0 * math.sqrt(2.0)  # plus the grid rounding of exact noise
        sensitivity += self.noise.grid(tree.sigma_node) * (self.d + 1)
        rho = tree_rho(tree.sigma_node, sensitivity, self.horizon)
        self.ledger.add(
            "tree-gaussian (zCDP)", "prefix sums of [x; r][x; r]^T", sensitivity=sensitivity,
            noise_scale=tree.sigma_node, rho=rho,
            note=f"joint DP; calibrated as Shariff & Sheffet 2018 (sigma_n = "
                 f"{self.sigma_n:.6g}); m = {tree.height} levels; shift 2*Upsilon = "
                 f"{2 * self.upsilon:.6g}",
        )

    def diagnostics(self) -> dict[str, float]:
        return {"sigma_n": self.sigma_n, "upsilon": self.upsilon,
                "floor_events": float(self.floor_events)}
