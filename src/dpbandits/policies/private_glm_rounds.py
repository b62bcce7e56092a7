"""Private-GLM's rounds as compiled kernels (Algorithm 2; docs/glm.md, "Per-round procedure").

A round is `select_round` (Criterion II where the mode checks it first, Criterion I with the
V-tree's leaf, V's release, Criterion II after it in paper mode, then the decision rule
`ucb_arm`) and, with the reward, `update_round` (Z_w or Z_nw, the H-tree's leaf and release,
strict mode's private counter of warm-up samples). `PrivateGLM.select`/`update` call these
kernels, and so does the compiled loop `private_glm_rounds` over pre-drawn tables. What is rare
and makes a release with its own noise and ledger entry (a switch with its θ_τ fit, a θ_w fit)
is the policy's Python: a kernel returns to its caller where one is due, and the round goes on
where it stopped.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from dpbandits.contract import OutcomeTables
from dpbandits.jit import jit
from dpbandits.linalg import cholesky_into, dot, first_argmax, log_det
from dpbandits.links import mean_dot
from dpbandits.policies.tables import pull
from dpbandits.privacy.tree import (
    TreeState,
    add_leaf,
    advance,
    clipped_eigh,
    query_into,
    release_into,
)

PAPER, STRICT, AB8FD16 = 0, 1, 2  # `RoundConstants.mode`
# slots of `RoundState.counts`
N_W, N_NW, N1, N2, STOP1, STOP2, WARM, ARM, DISCARDED, N_WARMUP = range(10)
COUNT_SLOTS = 10
# where `select_round` starts or stops: a returned phase below DECIDED asks for a switch, after
# which the round resumes there; ROUND_DONE: the round's update is made
START, CRITERION_ONE, LATE_CHECK, DECIDE, DECIDED, ROUND_DONE = range(6)
KEEP, FIT_W = 0, 1  # `update_round`: nothing to do, or a θ_w fit is due


class RoundState(NamedTuple):
    """Algorithm 2's state as kernels read and write it: the released V with its whitening
    (`whitening_into`: ‖x‖²_{V⁻¹} = ‖Wᵀx‖²), H_cur, H_prev with its whitening, θ_w and θ_τ,
    the data sets Z_w and Z_nw, the counters and flags (`counts`, slots above), the warm-up
    rounds, ab8fd16's running maxima of log det H_cur and H_prev, strict mode's last released
    count, and work arrays (`norms` and `scores` hold one value per arm)."""

    v: np.ndarray
    v_white: np.ndarray
    h_cur: np.ndarray
    h_prev: np.ndarray
    hp_white: np.ndarray
    theta_w: np.ndarray
    theta_tau: np.ndarray
    zw_x: np.ndarray
    zw_y: np.ndarray
    znw_x: np.ndarray
    znw_y: np.ndarray
    counts: np.ndarray
    warmup_times: np.ndarray
    logdets: np.ndarray
    released: np.ndarray
    norms: np.ndarray
    scores: np.ndarray
    leaf: np.ndarray
    work: np.ndarray
    cell: np.ndarray


class RoundConstants(NamedTuple):
    """The mode (PAPER, STRICT, AB8FD16), the link's kind and Algorithm 2's constants as the
    rounds use them."""

    mode: int
    kind: int
    thr_w: float
    beta: float
    width_scale: float
    switch_above: float
    log_det_ratio: float
    count_margin: float


def round_state(d: int, horizon: int, K: int, lam: float) -> RoundState:
    """The state before round 0: V = H_cur = H_prev = λI, θ_w = θ_τ = 0, empty data sets."""
    eye = np.eye(d)
    return RoundState(
        v=lam * eye, v_white=eye / math.sqrt(lam), h_cur=lam * eye, h_prev=lam * eye,
        hp_white=eye / math.sqrt(lam),
        theta_w=np.zeros(d), theta_tau=np.zeros(d),
        zw_x=np.empty((horizon, d)), zw_y=np.empty(horizon),
        znw_x=np.empty((horizon, d)), znw_y=np.empty(horizon),
        counts=np.zeros(COUNT_SLOTS, dtype=np.int64),
        warmup_times=np.empty(horizon, dtype=np.int64),
        logdets=np.full(2, d * math.log(lam)), released=np.zeros(1),
        norms=np.empty(K), scores=np.empty(K), leaf=np.empty((d, d)), work=np.empty((d, d)),
        cell=np.empty((1, 1)))


# ---------------------------------------------------------------------- linear algebra


@jit
def white_norms_into(arms: np.ndarray, w: np.ndarray, out: np.ndarray) -> None:
    """out_i = ‖Wᵀx_i‖² for the rows x_i of `arms`: ‖x_i‖²_{A⁻¹} for a whitening W of A
    (WᵀAW = I, so A⁻¹ = WWᵀ)."""
    d = w.shape[0]
    for i in range(arms.shape[0]):
        total = 0.0
        for j in range(d):
            p = 0.0
            for k in range(d):
                p += arms[i, k] * w[k, j]
            total += p * p
        out[i] = total


@jit
def whiten_into(vals: np.ndarray, vecs: np.ndarray, out: np.ndarray) -> None:
    """W = vecs·diag(vals)^(−1/2), so that WᵀBW = I for B = vecs·diag(vals)·vecsᵀ."""
    for i in range(vecs.shape[0]):
        for j in range(vecs.shape[1]):
            out[i, j] = vecs[i, j] / math.sqrt(vals[j])


@jit
def whitening_into(a: np.ndarray, floor: float, w: np.ndarray, work: np.ndarray) -> None:
    """A whitening W of the PSD-repaired symmetric A (WᵀAW = I, `work` is scratch): L⁻ᵀ for
    A = LLᵀ; where A is too close to singular for a Cholesky factor, Q·diag(max(λ,
    floor))^(−1/2) from A = QΛQᵀ (the eigenvalues clipped at the floor, as the repair does)."""
    d = a.shape[0]
    if not cholesky_into(a, work):
        vals, vecs = clipped_eigh(a, floor)
        whiten_into(vals, vecs, w)
        return
    for j in range(d):  # row j of W is column j of L⁻¹: L⁻¹e_j by forward substitution
        for i in range(d):
            if i < j:
                w[j, i] = 0.0
                continue
            total = 1.0 if i == j else 0.0
            for k in range(j, i):
                total -= work[i, k] * w[j, k]
            w[j, i] = total / work[i, i]


@jit
def whitened(a: np.ndarray, w: np.ndarray, work: np.ndarray) -> np.ndarray:
    """The symmetrised WᵀAW (`work` is scratch): for the whitening W of B, its eigenvalues
    are the generalised eigenvalues of (A, B)."""
    d = a.shape[0]
    for i in range(d):  # work = AW
        for j in range(d):
            total = 0.0
            for k in range(d):
                total += a[i, k] * w[k, j]
            work[i, j] = total
    m = np.empty((d, d))
    for i in range(d):  # m = Wᵀ(AW)
        for j in range(d):
            total = 0.0
            for k in range(d):
                total += w[k, i] * work[k, j]
            m[i, j] = total
    for i in range(d):
        for j in range(i + 1, d):
            value = (m[i, j] + m[j, i]) * 0.5
            m[i, j] = value
            m[j, i] = value
    return m


@jit
def gen_eig_max_white(a: np.ndarray, w: np.ndarray, work: np.ndarray) -> float:
    """Largest generalised eigenvalue of (A, B) for the whitening W of B."""
    return np.linalg.eigvalsh(whitened(a, w, work))[a.shape[0] - 1]


@jit
def gen_eig_above(a: np.ndarray, w: np.ndarray, threshold: float, work: np.ndarray) -> bool:
    """Whether the largest generalised eigenvalue of (A, B), W the whitening of B, exceeds
    `threshold` > 0. Gershgorin's discs bound it by max_i m_ii + Σ_{j≠i} |m_ij| (m = WᵀAW):
    a bound below the threshold by far more than rounding settles "no" without the
    eigenvalues."""
    m = whitened(a, w, work)
    bound = -math.inf
    for i in range(m.shape[0]):
        row = 0.0
        for j in range(m.shape[0]):
            row += abs(m[i, j])
        bound = max(bound, m[i, i] + (row - abs(m[i, i])))
    if bound < threshold * (1.0 - 1e-9):
        return False
    return np.linalg.eigvalsh(m)[m.shape[0] - 1] > threshold


@jit
def log_det_positive(a: np.ndarray, work: np.ndarray) -> float:
    """ln det A of a symmetric A, −∞ when det A ≤ 0 (slogdet's sign): by Cholesky where A is
    positive definite, else from its eigenvalues."""
    if cholesky_into(a, work):
        return log_det(work)
    vals = np.linalg.eigvalsh(a)
    total, negative = 0.0, 0
    for value in vals:
        if value == 0.0:
            return -math.inf
        if value < 0.0:
            negative += 1
        total += math.log(abs(value))
    return total if negative % 2 == 0 else -math.inf


# ---------------------------------------------------------------------- the round's steps


@jit
def switch_h_prev(st: RoundState, c: RoundConstants, floor: float) -> None:
    """H_prev ← H_cur (Alg. 2 line 12) with its whitening; ab8fd16: the running maximum of
    log det H_prev."""
    d = st.h_cur.shape[0]
    for i in range(d):
        for j in range(d):
            st.h_prev[i, j] = st.h_cur[i, j]
    whitening_into(st.h_prev, floor, st.hp_white, st.work)
    if c.mode == AB8FD16:
        value = log_det_positive(st.h_prev, st.work)
        if value > st.logdets[1]:
            st.logdets[1] = value


@jit
def ucb_arm(arms: np.ndarray, theta_w: np.ndarray, theta_tau: np.ndarray, beta: float,
            hp_white: np.ndarray, width_scale: float, v_white: np.ndarray, scores: np.ndarray,
            widths: np.ndarray) -> int:
    """Alg. 2 lines 13–15: eliminate the arms x with xᵀθ_w + γ√κ‖x‖_{V⁻¹} below the largest
    xᵀθ_w − γ√κ‖x‖_{V⁻¹} (none while θ_w = 0), then play the first argmax of
    ((θ_w + θ_τ)/2)ᵀx + β‖x‖_{H_prev⁻¹} (V and H_prev given by their whitenings)."""
    K, d = arms.shape
    white_norms_into(arms, hp_white, scores)
    for i in range(K):
        centre = 0.0
        for j in range(d):
            centre += arms[i, j] * (0.5 * (theta_w[j] + theta_tau[j]))
        scores[i] = centre + beta * math.sqrt(scores[i])
    eliminating = False
    for j in range(d):
        eliminating = eliminating or theta_w[j] != 0.0
    if eliminating:
        white_norms_into(arms, v_white, widths)
        low = -math.inf
        for i in range(K):
            widths[i] = width_scale * math.sqrt(widths[i])
            low = max(low, dot(arms[i], theta_w) - widths[i])
        for i in range(K):
            if not dot(arms[i], theta_w) + widths[i] >= low:
                scores[i] = -math.inf
    return first_argmax(scores)


@jit
def select_round(phase: int, arms: np.ndarray, st: RoundState, c: RoundConstants,
                 vtree: TreeState) -> int:
    """Alg. 2's choice among `arms` from `phase` on: DECIDED with the arm in counts[ARM], or the
    phase to resume at once the caller has switched because Criterion II is due. Criterion II
    (line 11, until c₂ switches): the largest generalised eigenvalue of (H_cur, H_prev) above
    f_sw + slack (ab8fd16: max log det H_cur ≥ ln 2 + max log det H_prev), checked first in
    strict mode and after V's release in paper mode; Criterion I (line 4): the arm of largest
    m = ‖x‖²_{V⁻¹} when that exceeds thr_w, with V-tree leaf x xᵀ/(1 + m) (its H-tree leaf 0
    is the update's: nothing reads H in between); else V-tree leaf 0 and, after Criterion II,
    the decision rule `ucb_arm`."""
    counts = st.counts
    norms = st.norms
    if phase == START and c.mode != STRICT:
        phase = CRITERION_ONE
    while True:
        if phase == START or phase == LATE_CHECK:  # Criterion II, then the next phase
            if not counts[STOP2]:
                if c.mode == AB8FD16:
                    due = not st.logdets[0] < c.log_det_ratio + st.logdets[1]
                else:
                    due = gen_eig_above(st.h_cur, st.hp_white, c.switch_above, st.work)
                if due:
                    return phase + 1
            phase += 1
        elif phase == CRITERION_ONE:
            white_norms_into(arms, st.v_white, norms)
            a = first_argmax(norms)
            warm = norms[a] > c.thr_w
            counts[WARM] = 1 if warm else 0
            if warm:
                x = arms[a]
                for i in range(x.shape[0]):
                    for j in range(x.shape[0]):
                        st.leaf[i, j] = (x[i] * x[j]) / (1.0 + norms[a])
                add_leaf(vtree, st.leaf)
            else:
                advance(vtree.count)
            query_into(vtree, vtree.noise[vtree.count[0]], st.v)
            whitening_into(st.v, vtree.floor, st.v_white, st.work)
            if warm:
                counts[ARM] = a
                return DECIDED
            phase = DECIDE if c.mode == STRICT else LATE_CHECK
        else:
            counts[ARM] = ucb_arm(arms, st.theta_w, st.theta_tau, c.beta, st.hp_white,
                                  c.width_scale, st.v_white, st.scores, norms)
            return DECIDED


@jit
def update_round(t: int, x: np.ndarray, r: float, st: RoundState, c: RoundConstants,
                 htree: TreeState, counter: TreeState) -> int:
    """Alg. 2's update with the round's (x, r): a Criterion-I sample joins Z_w unless the c₁
    θ_w fits are made (then it is discarded; paper mode: it joins Z_nw as well and a θ_w fit
    follows) and the H-tree gets leaf 0; any other joins Z_nw and gives the H-tree the leaf
    μ̇(xᵀθ_w)/e·x xᵀ; H_cur is released (ab8fd16: the running maximum of its log det); strict:
    the counter's leaf (1 for a sample that joined Z_w) and release, a θ_w fit once the
    released count less the margin reaches n₁ + 1. FIT_W when a θ_w fit is due, else KEEP."""
    counts = st.counts
    collected = False
    if counts[WARM]:
        st.warmup_times[counts[N_WARMUP]] = t
        counts[N_WARMUP] += 1
        if counts[STOP1]:
            counts[DISCARDED] += 1
        else:
            for j in range(x.shape[0]):
                st.zw_x[counts[N_W], j] = x[j]
            st.zw_y[counts[N_W]] = r
            counts[N_W] += 1
            collected = True
    if not counts[WARM] or (collected and c.mode != STRICT):
        for j in range(x.shape[0]):
            st.znw_x[counts[N_NW], j] = x[j]
        st.znw_y[counts[N_NW]] = r
        counts[N_NW] += 1
    if counts[WARM]:
        advance(htree.count)
    else:
        weight = mean_dot(c.kind, dot(x, st.theta_w)) / math.e
        for i in range(x.shape[0]):
            for j in range(x.shape[0]):
                st.leaf[i, j] = weight * (x[i] * x[j])
        add_leaf(htree, st.leaf)
    query_into(htree, htree.noise[htree.count[0]], st.h_cur)
    if c.mode == AB8FD16:
        value = log_det_positive(st.h_cur, st.work)
        if value > st.logdets[0]:
            st.logdets[0] = value
    if c.mode != STRICT:
        return FIT_W if collected else KEEP
    st.cell[0, 0] = 1.0
    if collected:
        add_leaf(counter, st.cell)
    else:
        advance(counter.count)
    release_into(counter, counter.noise[counter.count[0]], st.cell)
    st.released[0] = st.cell[0, 0]
    due = not counts[STOP1] and st.released[0] - c.count_margin >= counts[N1] + 1
    return FIT_W if due else KEEP


@jit
def private_glm_rounds(t: int, phase: int, tables: OutcomeTables, st: RoundState,
                       c: RoundConstants, vtree: TreeState, htree: TreeState,
                       counter: TreeState) -> tuple[int, int]:
    """The rounds from round t, `phase` on, on pre-drawn tables (`select_round`, `pull`,
    `update_round`), until the end (t = T) or a switch (phase < DECIDED) or θ_w fit
    (ROUND_DONE) is due at round t: (t, phase), where the caller resumes."""
    horizon = tables.arms.shape[0]
    while t < horizon:
        if phase == ROUND_DONE:
            t += 1
            phase = START
            continue
        arms = tables.arms[t]
        phase = select_round(phase, arms, st, c, vtree)
        if phase != DECIDED:
            return t, phase
        i = st.counts[ARM]
        r = pull(tables, t, i)
        phase = ROUND_DONE
        if update_round(t, arms[i], r, st, c, htree, counter) == FIT_W:
            return t, phase
    return t, phase
