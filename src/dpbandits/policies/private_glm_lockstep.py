"""Private-GLM's trials in lockstep (docs/architecture.md, "Runner"): each round's tree
releases, eigen-decompositions, Criterion I and II checks, warm-up counter and UCB scores of
every trial of a shard are one numpy call each on the trials' stacked state. Fits and switches,
which a trial makes a few times per run, and the bookkeeping of Criterion-I rounds are the
policy's own methods.

Every call is one that gives each trial the bits of its own run: stacked `matmul` and the
LAPACK gufuncs compute each matrix as the 2-d call does, elementwise operations and row sums
over the last axis are the same operations (tests/policies/test_private_glm_lockstep.py).
"""

from __future__ import annotations

import math

import numpy as np

from dpbandits import small_linalg
from dpbandits.policies.base import Lockstep
from dpbandits.policies.private_glm import AB8FD16_DET_RATIO, SWITCH_SLACK, E, PrivateGLM
from dpbandits.privacy.tree import MatrixTree, query_nodes


def stacked_inverse_norms(arms: np.ndarray, vals: np.ndarray, vecs: np.ndarray) -> np.ndarray:
    """Row i: ‖x‖²_{A_i⁻¹} for every arm x, A_i = vecs_i·diag(vals_i)·vecs_iᵀ."""
    p = np.matmul(arms, vecs)
    return (p * p / vals[:, None, :]).sum(axis=2)


def stacked_dot(rows: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Entry i: rows_i · vectors_i, as the 1-d `rows[i] @ vectors[i]` computes it."""
    return np.matmul(rows[:, None, :], vectors[:, :, None])[:, 0, 0]


def stacked_scores(arms: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Row i: `arms @ vectors[i]`."""
    return np.matmul(arms, vectors[:, :, None])[:, :, 0]


def stacked_outer(rows: np.ndarray) -> np.ndarray:
    """Entry i: `np.outer(rows[i], rows[i])`."""
    return rows[:, :, None] * rows[:, None, :]


def transpose(stack: np.ndarray) -> np.ndarray:
    """Each matrix of a stack transposed (a view)."""
    return np.swapaxes(stack, 1, 2)


def rows_of(array: np.ndarray, mask: np.ndarray, every: bool) -> np.ndarray:
    """`array[mask]`; the array itself when `every` says the mask selects every row."""
    return array if every else array[mask]


class StackedTrees:
    """The `MatrixTree`s of several trials as one: noise drawn eagerly at construction, the
    same cover, horizon, shape, σ, shift and floor; each trial's releases are its own tree's
    (`MatrixTree.update`, `query_raw`, `query_eigh`, `query`).

    ab8fd16's cover sums node sums, along axis 1 of the stack: for matrices of dim ≥ 2 that
    adds the nodes one after another, as the sum of one tree's nodes over axis 0 does (for
    dim = 1 numpy sums along the contiguous axis pairwise instead, so those are not stacked).
    """

    def __init__(self, trees: list[MatrixTree]) -> None:
        self.trees = trees
        first = trees[0]
        self.horizon, self.shift, self.floor = first.horizon, first.shift, first.psd_floor
        self.count = first.count
        self.prefix = np.stack([tree._prefix for tree in trees])
        self.cover = np.stack([tree._cover_noise_table() for tree in trees])
        for tree, table in zip(trees, self.cover, strict=True):
            tree._cover_sums = table  # the tree's own table, not a second copy
        self.diagonal = (slice(None), *np.diag_indices(first.dim))
        self.height, self.cover_kind = first.height, first.cover_kind
        self.node_sums = (None if first._node_sums is None
                          else np.stack([tree._node_sums for tree in trees]))

    @staticmethod
    def accepts(trees: list[MatrixTree]) -> bool:
        """Whether these trees can be stacked (see the class docstring)."""
        first = trees[0]
        if first.cover_kind != "dyadic" and first.dim < 2:
            return False
        return all(tree._noise_table is not None
                   and (tree.cover_kind, tree.count, tree.horizon, tree.dim, tree.sigma_node,
                        tree.exact, tree.shift, tree.psd_floor)
                   == (first.cover_kind, first.count, first.horizon, first.dim,
                       first.sigma_node, first.exact, first.shift, first.psd_floor)
                   for tree in trees)

    def advance(self, rows: np.ndarray | None, leaves: np.ndarray) -> None:
        """Every tree's next leaf: leaves[j] for the j-th trial of the mask `rows` (None: of
        every trial), none for the others."""
        if self.count >= self.horizon:
            raise ValueError(f"MatrixTree: update {self.count + 1} exceeds horizon "
                             f"{self.horizon}")
        self.count += 1
        if len(leaves):
            leaves = self.trees[0].snap(leaves)  # elementwise: each trial's own snap
            rows = slice(None) if rows is None else rows
            self.prefix[rows] += leaves
            if self.node_sums is not None:
                node = (1 << (self.height - 1)) + self.count - 1
                while node > 0:
                    self.node_sums[rows, node] += leaves
                    node //= 2

    def query_raw(self) -> np.ndarray:
        """Every tree's `query_raw`."""
        if self.node_sums is None:
            data = self.prefix
        else:
            data = self.node_sums[:, query_nodes(self.count, self.height, self.cover_kind)
                                  ].sum(axis=1)
        out = data + self.cover[:, self.count]
        out = 0.5 * (out + transpose(out))
        out[self.diagonal] += self.shift
        return out

    def query_eigh(self) -> tuple[np.ndarray, np.ndarray]:
        """Every tree's `query_eigh`."""
        vals, vecs = small_linalg.eigh(self.query_raw())
        return np.maximum(vals, self.floor), vecs

    def query(self) -> np.ndarray:
        """Every tree's `query`: the raw release, PSD-repaired where Gershgorin's discs do not
        already put every eigenvalue above the floor."""
        raw = self.query_raw()
        diag = raw.diagonal(axis1=1, axis2=2)
        radius = np.abs(raw).sum(axis=2) - np.abs(diag)
        repair = ~(diag - radius >= self.floor).all(axis=1)
        if repair.any():
            vals, vecs = small_linalg.eigh(raw[repair])
            vals = np.maximum(vals, self.floor)
            raw[repair] = (vecs * vals[:, None, :]) @ transpose(vecs)
        return raw

    def close(self) -> None:
        """Hand every tree its count, prefix sum and node sums back."""
        for i, tree in enumerate(self.trees):
            tree.count = self.count
            tree._prefix = self.prefix[i].copy()
            if self.node_sums is not None:
                tree._node_sums = self.node_sums[i].copy()


class PrivateGLMLockstep(Lockstep):
    """`PrivateGLM.select`/`update` for several trials at once."""

    def __init__(self, policies: list[PrivateGLM]) -> None:
        self.policies = policies
        first = policies[0]
        c = first.const
        self.thr_w, self.beta = c.thr_w, c.beta
        self.width_scale = c.gamma * math.sqrt(c.kappa)
        self.switch_above = c.f_sw + SWITCH_SLACK
        self.link = first.link
        self.vtree = StackedTrees([p.vtree for p in policies])
        self.htree = StackedTrees([p.htree for p in policies])
        self.v_vals = np.stack([p.v_vals for p in policies])
        self.v_vecs = np.stack([p.v_vecs for p in policies])
        self.h_cur = np.stack([p.h_cur for p in policies])
        self.hp_vals = np.stack([p.h_prev_eig[0] for p in policies])
        self.hp_vecs = np.stack([p.h_prev_eig[1] for p in policies])
        self.theta_w = np.stack([p.theta_w for p in policies])
        self.theta_tau = np.stack([p.theta_tau for p in policies])
        self.stop2 = np.array([p.stop2 for p in policies])
        self.n_nw = np.array([p.n_nw for p in policies])
        self.znw_x = np.stack([p.znw_x for p in policies])
        self.znw_y = np.stack([p.znw_y for p in policies])
        for i, p in enumerate(policies):  # the policies' fits read Z_nw from here
            p.znw_x, p.znw_y = self.znw_x[i], self.znw_y[i]
        self.warm = np.zeros(len(policies), dtype=bool)
        self.rows = np.arange(len(policies))
        self.strict = first.strict
        if self.strict:  # the private counter of Criterion-I samples and the θ_w fits it starts
            self.counter = StackedTrees([p.counter for p in policies])
            self.count_margin = first.count_margin
            self.n1 = np.array([p.n1 for p in policies])
            self.stop1 = np.array([p.stop1 for p in policies])
        self.ab8fd16 = first.ab8fd16
        if self.ab8fd16:  # its Criterion II: the running maxima of log det H_cur and H_prev
            self.log_ratio = math.log(AB8FD16_DET_RATIO)
            self.logdet_cur = np.array([p.logdet_cur for p in policies])
            self.logdet_prev = np.array([p.logdet_prev for p in policies])

    @classmethod
    def build(cls, policies: list[PrivateGLM]) -> PrivateGLMLockstep | None:  # type: ignore[override]
        """The driver of fresh runs of one accounting and code state, with equal constants
        and noisy trees."""
        first = policies[0]
        if any((p.strict, p.ab8fd16, p.const) != (first.strict, first.ab8fd16, first.const)
               or p.n_nw or p.n_w for p in policies):
            return None
        trees = [[p.vtree for p in policies], [p.htree for p in policies]]
        if first.strict:
            if any(p.count_margin != first.count_margin for p in policies):
                return None
            trees.append([p.counter for p in policies])
        return cls(policies) if all(map(StackedTrees.accepts, trees)) else None

    def select(self, t: int, arms: np.ndarray) -> np.ndarray:
        """`PrivateGLM.select` of every trial; the H release of warm trials moves to `update`
        (nothing reads it in between)."""
        if self.strict:  # Criterion II in every round, before Criterion I
            self._criterion_two(t, self.rows >= 0, True)
        norms = stacked_inverse_norms(arms, self.v_vals, self.v_vecs)
        best = norms.argmax(axis=1)
        top = norms[self.rows, best]
        warm = top > self.thr_w  # Criterion I
        x = arms[best[warm]]
        self.vtree.advance(warm, stacked_outer(x) / (1.0 + top[warm])[:, None, None])
        self.v_vals, self.v_vecs = self.vtree.query_eigh()
        self.warm = warm
        cold = ~warm
        every = bool(cold.all())
        if every or cold.any():
            if self.ab8fd16:
                self._criterion_two_ab8fd16(t, cold)
            elif not self.strict:
                self._criterion_two(t, cold, every)
            best[cold] = self._ucb(arms, cold, every)
        return best

    def _criterion_two(self, t: int, cold: np.ndarray, every: bool) -> None:
        """`gen_eig_max_whitened(H_cur, H_prev)` of the trials still switching; a trial above
        f_sw switches through its policy."""
        check = cold & ~self.stop2
        every = every and not self.stop2.any()
        if not (every or check.any()):
            return
        vals, vecs = rows_of(self.hp_vals, check, every), rows_of(self.hp_vecs, check, every)
        w = vecs / np.sqrt(vals)[:, None, :]
        m = transpose(w) @ rows_of(self.h_cur, check, every) @ w
        top = small_linalg.eigvalsh(0.5 * (m + transpose(m)))[:, -1]
        for i in self.rows[check][top > self.switch_above]:
            self._switch(t, i)

    def _criterion_two_ab8fd16(self, t: int, cold: np.ndarray) -> None:
        """ab8fd16's Criterion II: a switch when max log det H_cur ≥ ln 2 + max log det H_prev."""
        below = self.logdet_cur < self.log_ratio + self.logdet_prev
        for i in self.rows[cold & ~(self.stop2 | below)]:
            self._switch(t, i)

    def _switch(self, t: int, i: int) -> None:
        """Trial i switches (`PrivateGLM.switch`) at its current H and Z_nw."""
        policy = self.policies[i]
        policy.h_cur, policy.n_nw = self.h_cur[i].copy(), int(self.n_nw[i])
        policy.switch(t)
        self.hp_vals[i], self.hp_vecs[i] = policy.h_prev_eig
        self.theta_tau[i] = policy.theta_tau
        self.stop2[i] = policy.stop2
        if self.ab8fd16:
            self.logdet_prev[i] = policy.logdet_prev

    def _ucb(self, arms: np.ndarray, cold: np.ndarray, every: bool) -> np.ndarray:
        """The UCB action of the trials without a Criterion-I arm, after elimination by θ_w."""
        theta_w = rows_of(self.theta_w, cold, every)
        centre = 0.5 * (theta_w + rows_of(self.theta_tau, cold, every))
        score = stacked_scores(arms, centre) + self.beta * np.sqrt(stacked_inverse_norms(
            arms, rows_of(self.hp_vals, cold, every), rows_of(self.hp_vecs, cold, every)))
        eliminating = theta_w.any(axis=1)  # with θ_w = 0 the elimination keeps every arm
        if eliminating.any():
            all_w = bool(eliminating.all())
            v_vals = rows_of(rows_of(self.v_vals, cold, every), eliminating, all_w)
            v_vecs = rows_of(rows_of(self.v_vecs, cold, every), eliminating, all_w)
            width = self.width_scale * np.sqrt(stacked_inverse_norms(arms, v_vals, v_vecs))
            centre_w = stacked_scores(arms, rows_of(theta_w, eliminating, all_w))
            keep = centre_w + width >= (centre_w - width).max(axis=1, keepdims=True)
            if all_w:
                score = np.where(keep, score, -np.inf)
            else:
                score[eliminating] = np.where(keep, score[eliminating], -np.inf)
        return score.argmax(axis=1)

    def update(self, t: int, chosen: np.ndarray, rewards: np.ndarray) -> None:
        """`PrivateGLM.update` of every trial: warm trials through their policy (Z_w, and the
        paper's θ_w fits), the others' Z_nw and H leaves stacked; then every trial's H release
        and, strict, its counter and the θ_w fits the counter starts."""
        warm = self.warm
        every = not warm.any()
        collected = np.zeros(len(warm), dtype=bool)
        if not every:
            for i in self.rows[warm]:
                policy = self.policies[i]
                if self.strict:
                    collected[i] = policy.collect_warm(t, chosen[i], float(rewards[i]))
                    continue
                policy._warm, policy.n_nw = True, int(self.n_nw[i])
                policy.update(t, chosen[i], float(rewards[i]))
                self.n_nw[i] = policy.n_nw
                self.theta_w[i] = policy.theta_w
                self.theta_tau[i] = policy.theta_tau
        cold = ~warm
        rows = self.rows if every else self.rows[cold]
        x = rows_of(chosen, cold, every)
        self.znw_x[rows, self.n_nw[rows]] = x
        self.znw_y[rows, self.n_nw[rows]] = rewards[rows]
        self.n_nw[rows] += 1
        weight = self.link.dot(stacked_dot(x, rows_of(self.theta_w, cold, every))) / E
        self.htree.advance(None if every else cold, weight[:, None, None] * stacked_outer(x))
        self.h_cur = self.htree.query()
        if self.ab8fd16:  # max(running maximum, log det H_cur), as Python's max picks
            sign, value = np.linalg.slogdet(self.h_cur)
            logdet = np.where(sign > 0, value, -np.inf)
            self.logdet_cur = np.where(logdet > self.logdet_cur, logdet, self.logdet_cur)
        if self.strict:
            self._count(t, collected)

    def _count(self, t: int, collected: np.ndarray) -> None:
        """Strict: the counter's next leaf (1 for a sample added to Z_w) and release; a trial
        whose released count reaches n₁ + 1 plus the margin fits θ_w through its policy."""
        self.counter.advance(collected, np.ones((int(collected.sum()), 1, 1)))
        released = self.counter.query_raw()[:, 0, 0]
        for i in self.rows[~self.stop1 & (released - self.count_margin >= self.n1 + 1)]:
            policy = self.policies[i]
            policy.count_check(t, float(released[i]))
            self.n1[i], self.stop1[i] = policy.n1, policy.stop1
            self.theta_w[i], self.theta_tau[i] = policy.theta_w, policy.theta_tau

    def close(self) -> None:
        for i, policy in enumerate(self.policies):
            policy.v_vals, policy.v_vecs = self.v_vals[i].copy(), self.v_vecs[i].copy()
            policy.h_cur = self.h_cur[i].copy()
            policy.n_nw = int(self.n_nw[i])
            policy._warm = bool(self.warm[i])
            if self.ab8fd16:
                policy.logdet_cur = float(self.logdet_cur[i])
        self.vtree.close()
        self.htree.close()
        if self.strict:
            self.counter.close()
