"""Private-GLM's trials in lockstep (docs/architecture.md, "Runner"): each round's tree
releases, eigen-decompositions, Criterion I and II checks, warm-up counter and UCB scores of
every trial of a shard are one call each on the trials' stacked state (numpy's, or the
compiled kernels of `_stacked` for the releases and Criterion II), and stretches of rounds
without a Criterion-I arm, a switch or a fit are one compiled call (`play_rounds`). Fits and
switches, which a trial makes a few times per run, and the bookkeeping of Criterion-I rounds
are the policy's own methods.

Every call gives each trial the bits of its own run: `inverse_norms`, `gen_eig_max_white` and
the trees' releases (`StackedTrees`) are the policy's own functions applied to stacks, the
stacked forms below of its 1-d products compute each trial's numbers with the same calls, and
`_stacked` makes numpy's calls and decisions (tests/policies/test_private_glm_lockstep.py,
tests/test_stacked.py).
"""

from __future__ import annotations

import numpy as np

from dpbandits import _stacked
from dpbandits.links import LINK_KINDS, compiled_dot, expit
from dpbandits.policies.base import Lockstep
from dpbandits.policies.private_glm import (
    AB8FD16_LOG_DET_RATIO,
    E,
    PrivateGLM,
    gen_eig_max_white,
    inverse_norms,
    whitening,
)
from dpbandits.privacy.tree import StackedTrees
from dpbandits.small_linalg import slogdet_stack


def stacked_dot(rows: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Entry i: rows_i · vectors_i, as the 1-d `rows[i] @ vectors[i]` computes it."""
    return np.matmul(rows[:, None, :], vectors[:, :, None])[:, 0, 0]


def stacked_scores(arms: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Row i: `arms @ vectors[i]`."""
    return np.matmul(arms, vectors[:, :, None])[:, :, 0]


def stacked_outer(rows: np.ndarray) -> np.ndarray:
    """Entry i: `np.outer(rows[i], rows[i])`."""
    return rows[:, :, None] * rows[:, None, :]


def rows_of(array: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """`array[mask]`; the array itself for the mask None, which selects every row."""
    return array if mask is None else array[mask]


def _key(policy: PrivateGLM) -> tuple:
    """What trials played together must share."""
    return (policy.strict, policy.ab8fd16, policy.const, policy.link,
            getattr(policy, "count_margin", None))


def _fresh(policy: PrivateGLM) -> bool:
    """No round played yet."""
    return not (policy.n_w or policy.n_nw or policy.fits or policy.warmup_times
                or policy.switch_times or policy.vtree.count or policy.htree.count)


class PrivateGLMLockstep(Lockstep):
    """`PrivateGLM.select`/`update` for several trials at once."""

    def __init__(self, policies: list[PrivateGLM]) -> None:
        self.policies = policies
        first = policies[0]
        self.strict, self.ab8fd16, self.link = first.strict, first.ab8fd16, first.link
        self.thr_w, self.beta = first.const.thr_w, first.const.beta
        self.width_scale, self.switch_above = first.width_scale, first.switch_above
        self.rows = np.arange(len(policies))
        self.vtree = StackedTrees([p.vtree for p in policies])
        self.htree = StackedTrees([p.htree for p in policies])

        def stack(read) -> np.ndarray:  # noqa: ANN001 - a one-line accessor
            return np.stack([read(p) for p in policies])

        self.v_vals, self.v_vecs = stack(lambda p: p.v_vals), stack(lambda p: p.v_vecs)
        self.h_cur = stack(lambda p: p.h_cur)
        self.hp_vals = stack(lambda p: p.h_prev_eig[0])
        self.hp_vecs = stack(lambda p: p.h_prev_eig[1])
        self.hp_white = whitening(self.hp_vals, self.hp_vecs)  # changes with H_prev only
        self.theta_w, self.theta_tau = stack(lambda p: p.theta_w), stack(lambda p: p.theta_tau)
        self.centre = 0.5 * (self.theta_w + self.theta_tau)  # changes with the fits only
        self.eliminating = self.theta_w.any(axis=1)  # with θ_w = 0 elimination keeps every arm
        self.stop2 = np.array([p.stop2 for p in policies])
        self.any_stop2 = bool(self.stop2.any())
        self.n_nw = np.array([p.n_nw for p in policies])
        self.znw_x, self.znw_y = stack(lambda p: p.znw_x), stack(lambda p: p.znw_y)
        for i, p in enumerate(policies):  # the policies' fits read Z_nw from here
            p.znw_x, p.znw_y = self.znw_x[i], self.znw_y[i]
        self.warm = np.zeros(len(policies), dtype=bool)
        self.n_warm = 0
        self.no_leaves = np.empty((0, first.problem.d, first.problem.d))
        if self.strict:  # the private counter of Criterion-I samples and the θ_w fits it starts
            self.counter = StackedTrees([p.counter for p in policies])
            self.count_margin = first.count_margin
            self.n1 = np.array([p.n1 for p in policies])
            self.stop1 = np.array([p.stop1 for p in policies])
            self.none_collected = np.zeros(len(policies), dtype=bool)
            self.no_counts = np.empty((0, 1, 1))
        if self.ab8fd16:  # its Criterion II: the running maxima of log det H_cur and H_prev
            self.logdet_cur = np.array([p.logdet_cur for p in policies])
            self.logdet_prev = np.array([p.logdet_prev for p in policies])
        mode = 1 if self.strict else 2 if self.ab8fd16 else 0  # `_stacked.c`'s
        tree = first.htree
        snap_grid = (tree.noise.grid(tree.sigma_node)  # type: ignore[union-attr]
                     if tree.exact and tree.sigma_node > 0 else 0.0)
        self.constants = (mode, LINK_KINDS.get(self.link.name, -1), self.thr_w,
                          self.switch_above, self.beta, self.width_scale,
                          AB8FD16_LOG_DET_RATIO, snap_grid,
                          self.count_margin if self.strict else 0.0)

    @classmethod
    def build(cls, policies: list[PrivateGLM]) -> PrivateGLMLockstep | None:  # type: ignore[override]
        """The driver of fresh runs of one accounting, code state and set of constants whose
        trees can be stacked; None otherwise."""
        first = policies[0]
        if any(_key(p) != _key(first) or not _fresh(p) for p in policies):
            return None
        trees = [[p.vtree for p in policies], [p.htree for p in policies]]
        if first.strict:
            trees.append([p.counter for p in policies])
        return cls(policies) if all(map(StackedTrees.accepts, trees)) else None

    # ------------------------------------------------------------------ select

    def select(self, t: int, arms: np.ndarray) -> np.ndarray:
        """`PrivateGLM.select` of every trial; the H release of warm trials moves to `update`
        (nothing reads it in between)."""
        if self.strict:  # Criterion II in every round, before Criterion I
            self._criterion_two(t, None)
        norms = self._inverse_norms(arms)
        best = norms.argmax(axis=1)
        top = norms[self.rows, best]
        warm = top > self.thr_w  # Criterion I
        n_warm = int(np.count_nonzero(warm))
        if n_warm:
            leaves = stacked_outer(arms[best[warm]])
            leaves /= (1.0 + top[warm])[:, None, None]
            self.vtree.advance(warm, leaves)
        else:
            self.vtree.advance(warm, self.no_leaves)
        self.v_vals, self.v_vecs = self.vtree.query_eigh()
        self.warm, self.n_warm = warm, n_warm
        if n_warm == len(warm):
            return best
        cold = None if n_warm == 0 else ~warm
        if self.ab8fd16:
            self._criterion_two_ab8fd16(t, ~warm)
        elif not self.strict:
            self._criterion_two(t, cold)
        if cold is None:
            return self._ucb(arms, None)
        best[cold] = self._ucb(arms, cold)
        return best

    def _inverse_norms(self, arms: np.ndarray) -> np.ndarray:
        """`inverse_norms` of the arms in every trial's V, compiled (`_stacked.inverse_norms`)
        where it takes the arrays."""
        if self._compiled(arms):
            return _stacked.inverse_norms(arms, self.v_vals, self.v_vecs)
        return inverse_norms(arms, self.v_vals, self.v_vecs)

    def _compiled(self, arms: np.ndarray) -> bool:
        """Whether `_stacked`'s kernels take the round's arms and the V stacks: C-ordered
        float64 (the other stacks are this driver's own, always so)."""
        return (arms.dtype == np.float64 and arms.flags.c_contiguous and arms.flags.aligned
                and self.v_vecs.flags.c_contiguous and self.v_vals.flags.c_contiguous)

    def _criterion_two(self, t: int, rows: np.ndarray | None) -> None:
        """`gen_eig_max_whitened(H_cur, H_prev)` of these trials (a mask; None: every trial)
        still switching; a trial above f_sw switches through its policy."""
        if self.any_stop2:
            rows = ~self.stop2 if rows is None else rows & ~self.stop2
            if not rows.any():
                return
        h, w = rows_of(self.h_cur, rows), rows_of(self.hp_white, rows)
        above = _stacked.above(h, w, self.switch_above)
        if above is None:  # an eigenvalue not finite: numpy's calls raise or say
            above = gen_eig_max_white(h, w) > self.switch_above
        if above.any():
            for i in rows_of(self.rows, rows)[above]:
                self._switch(t, i)

    def _criterion_two_ab8fd16(self, t: int, cold: np.ndarray) -> None:
        """ab8fd16's Criterion II: a switch when max log det H_cur ≥ ln 2 + max log det H_prev."""
        below = self.logdet_cur < AB8FD16_LOG_DET_RATIO + self.logdet_prev
        for i in self.rows[cold & ~(self.stop2 | below)]:
            self._switch(t, i)

    def _switch(self, t: int, i: int) -> None:
        """Trial i switches (`PrivateGLM.switch`) at its current H and Z_nw."""
        policy = self.policies[i]
        policy.h_cur, policy.n_nw = self.h_cur[i].copy(), int(self.n_nw[i])
        policy.switch(t)
        self.hp_vals[i], self.hp_vecs[i] = policy.h_prev_eig
        self.hp_white[i] = whitening(self.hp_vals[i], self.hp_vecs[i])
        self._estimates(i, policy)
        self.stop2[i] = policy.stop2
        self.any_stop2 = self.any_stop2 or policy.stop2
        if self.ab8fd16:
            self.logdet_prev[i] = policy.logdet_prev

    def _estimates(self, i: int, policy: PrivateGLM) -> None:
        """Trial i's θ_w and θ_τ after a fit, and what is kept from them."""
        self.theta_w[i], self.theta_tau[i] = policy.theta_w, policy.theta_tau
        self.centre[i] = 0.5 * (self.theta_w[i] + self.theta_tau[i])
        self.eliminating[i] = self.theta_w[i].any()

    def _ucb(self, arms: np.ndarray, cold: np.ndarray | None) -> np.ndarray:
        """The UCB action of the trials without a Criterion-I arm (a mask; None: every trial),
        after elimination by θ_w: compiled (`_stacked.ucb`) where it takes the arrays, else
        `numpy_ucb`."""
        if self._compiled(arms):
            return _stacked.ucb(arms, self.hp_vals, self.hp_vecs, self.centre, self.beta,
                                self.eliminating, self.v_vals, self.v_vecs, self.theta_w,
                                self.width_scale, cold)
        return self.numpy_ucb(arms, cold)

    def numpy_ucb(self, arms: np.ndarray, cold: np.ndarray | None) -> np.ndarray:
        """`_ucb` in numpy."""
        bonus = inverse_norms(arms, rows_of(self.hp_vals, cold), rows_of(self.hp_vecs, cold))
        np.sqrt(bonus, out=bonus)
        bonus *= self.beta
        score = stacked_scores(arms, rows_of(self.centre, cold))
        score += bonus
        eliminating = rows_of(self.eliminating, cold)
        if eliminating.any():
            mask = None if eliminating.all() else eliminating
            v_vals = rows_of(rows_of(self.v_vals, cold), mask)
            v_vecs = rows_of(rows_of(self.v_vecs, cold), mask)
            width = self.width_scale * np.sqrt(inverse_norms(arms, v_vals, v_vecs))
            centre_w = stacked_scores(arms, rows_of(rows_of(self.theta_w, cold), mask))
            keep = centre_w + width >= (centre_w - width).max(axis=1, keepdims=True)
            if mask is None:
                score = np.where(keep, score, -np.inf)
            else:
                score[mask] = np.where(keep, score[mask], -np.inf)
        return score.argmax(axis=1)

    # ------------------------------------------------------------------ rounds at once

    def play_rounds(self, t: int, stop: int, arms: np.ndarray,
                    outcomes: tuple[np.ndarray, np.ndarray],
                    trace: tuple[np.ndarray, np.ndarray, np.ndarray]) -> int:
        """The rounds from t on in which no trial has a Criterion-I arm, switches, releases a
        non-finite V or an H to repair or, strict, starts a θ_w fit, in one compiled call
        (`_stacked.private_glm_rounds`: `select` then `update` of such a round, the same
        bits); it stops before any other round, which `select`/`update` play."""
        if not (arms.dtype == np.float64 and arms.flags.c_contiguous and arms.flags.aligned
                and compiled_dot(self.link)):
            return t
        self.v_vals, self.v_vecs, self.h_cur = map(np.ascontiguousarray,
                                                   (self.v_vals, self.v_vecs, self.h_cur))
        state = (self.v_vals, self.v_vecs, self.h_cur, self.hp_vals, self.hp_vecs,
                 self.hp_white, self.centre, self.theta_w, self.eliminating, self.stop2,
                 self.znw_x, self.znw_y, self.n_nw,
                 *((self.logdet_cur, self.logdet_prev) if self.ab8fd16 else (None, None)),
                 *((self.n1, self.stop1) if self.strict else (None, None)))
        trees = (self.vtree.kernel_state(), self.htree.kernel_state(),
                 self.counter.kernel_state() if self.strict else None)
        played = _stacked.private_glm_rounds(t, stop, (arms, *outcomes, *trace), state, trees,
                                             self.constants, expit) - t
        if played:
            for stack in (self.vtree, self.htree, *((self.counter,) if self.strict else ())):
                stack.count += played
            self.warm, self.n_warm = np.zeros(len(self.policies), dtype=bool), 0
        return t + played

    # ------------------------------------------------------------------ update

    def update(self, t: int, chosen: np.ndarray, rewards: np.ndarray) -> None:
        """`PrivateGLM.update` of every trial: warm trials through their policy (Z_w, and the
        paper's θ_w fits), the others' Z_nw and H leaves stacked; then every trial's H release
        and, strict, its counter and the θ_w fits the counter starts."""
        warm, n_warm = self.warm, self.n_warm
        collected = self.none_collected if self.strict else None
        if n_warm:
            collected = np.zeros(len(warm), dtype=bool)
            for i in self.rows[warm]:
                collected[i] = self._warm_update(t, i, chosen[i], float(rewards[i]))
        if n_warm < len(warm):
            cold = None if n_warm == 0 else ~warm
            rows = rows_of(self.rows, cold)
            x = rows_of(chosen, cold)
            slots = self.n_nw[rows]
            self.znw_x[rows, slots] = x
            self.znw_y[rows, slots] = rewards[rows]
            self.n_nw[rows] += 1
            leaves = stacked_outer(x)
            leaves *= (self.link.dot(stacked_dot(x, rows_of(self.theta_w, cold))) / E
                       )[:, None, None]
            self.htree.advance(cold, leaves)
        else:
            self.htree.advance(None, self.no_leaves)
        self.h_cur = self.htree.query()
        if self.ab8fd16:  # max(running maximum, log det H_cur), as Python's max picks
            sign, value = slogdet_stack(self.h_cur)
            logdet = np.where(sign > 0, value, -np.inf)
            self.logdet_cur = np.where(logdet > self.logdet_cur, logdet, self.logdet_cur)
        if self.strict:
            self._count(t, collected)

    def _warm_update(self, t: int, i: int, x: np.ndarray, r: float) -> bool:
        """Trial i's Criterion-I round through its policy: whether strict Z_w took the sample."""
        policy = self.policies[i]
        if self.strict:
            return policy.collect_warm(t, x, r)
        policy._warm, policy.n_nw = True, int(self.n_nw[i])
        policy.update(t, x, r)
        self.n_nw[i] = policy.n_nw
        self._estimates(i, policy)
        return False

    def _count(self, t: int, collected: np.ndarray) -> None:
        """Strict: the counter's next leaf (1 for a sample added to Z_w) and release; a trial
        whose released count reaches n₁ + 1 plus the margin fits θ_w through its policy."""
        n = int(np.count_nonzero(collected))
        self.counter.advance(collected, np.ones((n, 1, 1)) if n else self.no_counts)
        released = self.counter.query_raw()[:, 0, 0]
        for i in self.rows[~self.stop1 & (released - self.count_margin >= self.n1 + 1)]:
            policy = self.policies[i]
            policy.count_check(t, float(released[i]))
            self.n1[i], self.stop1[i] = policy.n1, policy.stop1
            self._estimates(i, policy)

    def close(self) -> None:
        for i, policy in enumerate(self.policies):
            policy.v_vals, policy.v_vecs = self.v_vals[i].copy(), self.v_vecs[i].copy()
            policy.h_cur = self.h_cur[i].copy()
            policy.n_nw = int(self.n_nw[i])
            policy._warm = bool(self.warm[i])
            if self.ab8fd16:
                policy.logdet_cur = float(self.logdet_cur[i])
        for trees in (self.vtree, self.htree, *((self.counter,) if self.strict else ())):
            trees.close()
