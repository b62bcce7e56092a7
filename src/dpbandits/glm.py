"""GLM maximum-likelihood solvers and small linear-algebra helpers (docs/glm.md, "MLE solvers").

The damped Newton fit is one compiled kernel (`newton_fit`), which every fit of the project
runs: `newton_mle` on given data, `GrowingNewton` (and the policies' compiled round loops, on
its `FitArrays`) on data growing by one row per round. `compat_mle` is the authors' L-BFGS-B
through `scipy.optimize`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from dpbandits.jit import jit
from dpbandits.linalg import cholesky_into, dot, log_det, solve_lower_into, solve_lower_t_into
from dpbandits.links import Link, mean, mean_values

SOLVERS = ("compat", "newton")
LINE_SEARCH_TRIALS = 31  # the full step, then up to 30 halvings
FITS, FAILURES, CAPPED, ITERATIONS = 0, 1, 2, 3  # entries of `SolverStats.counts`
ROWS, KNOWN, SIDE = 0, 1, 2  # entries of `FitArrays.state`


class SolverStats:
    """Counts kept across the fits of one run: fits, failures, norm-cap events, iterations
    (an int64 array, which compiled fits add to)."""

    def __init__(self) -> None:
        self.counts = np.zeros(4, dtype=np.int64)

    @property
    def fits(self) -> int:
        return int(self.counts[FITS])

    @property
    def failures(self) -> int:
        return int(self.counts[FAILURES])

    @property
    def capped(self) -> int:
        return int(self.counts[CAPPED])

    @property
    def iterations(self) -> int:
        return int(self.counts[ITERATIONS])

    def record(self, success: bool, iterations: int = 0, capped: bool = False) -> None:
        """Count one fit."""
        record(self.counts, success, iterations, capped)

    def as_dict(self) -> dict[str, int]:
        return {"fits": self.fits, "failures": self.failures, "capped": self.capped,
                "iterations": self.iterations}


@jit
def record(counts: np.ndarray, success: bool, iterations: int, capped: bool) -> None:
    """One fit into the counts (fits, failures, norm-cap events, iterations)."""
    counts[FITS] += 1
    counts[FAILURES] += 0 if success else 1
    counts[CAPPED] += 1 if capped else 0
    counts[ITERATIONS] += iterations


# -- the canonical loss F(θ) = Σ b(xᵢᵀθ) − rᵢxᵢᵀθ + λ‖θ‖² and its derivatives -------------------

@jit
def _sum(w: np.ndarray, n: int) -> float:
    """Σ wᵢ over i < n, in four interleaved partial sums."""
    s0 = s1 = s2 = s3 = 0.0
    i = 0
    while i + 4 <= n:
        s0 += w[i]
        s1 += w[i + 1]
        s2 += w[i + 2]
        s3 += w[i + 3]
        i += 4
    while i < n:
        s0 += w[i]
        i += 1
    return (s0 + s1) + (s2 + s3)


@jit
def _column_sum(w: np.ndarray, X: np.ndarray, a: int, n: int) -> float:
    """Σ wᵢX[i, a] over i < n, in four interleaved partial sums."""
    s0 = s1 = s2 = s3 = 0.0
    i = 0
    while i + 4 <= n:
        s0 += w[i] * X[i, a]
        s1 += w[i + 1] * X[i + 1, a]
        s2 += w[i + 2] * X[i + 2, a]
        s3 += w[i + 3] * X[i + 3, a]
        i += 4
    while i < n:
        s0 += w[i] * X[i, a]
        i += 1
    return (s0 + s1) + (s2 + s3)


@jit
def _gram_sum(w: np.ndarray, X: np.ndarray, a: int, c: int, n: int) -> float:
    """Σ wᵢX[i, a]X[i, c] over i < n, in four interleaved partial sums."""
    s0 = s1 = s2 = s3 = 0.0
    i = 0
    while i + 4 <= n:
        s0 += w[i] * X[i, a] * X[i, c]
        s1 += w[i + 1] * X[i + 1, a] * X[i + 1, c]
        s2 += w[i + 2] * X[i + 2, a] * X[i + 2, c]
        s3 += w[i + 3] * X[i + 3, a] * X[i + 3, c]
        i += 4
    while i < n:
        s0 += w[i] * X[i, a] * X[i, c]
        i += 1
    return (s0 + s1) + (s2 + s3)


@jit
def accumulate(X: np.ndarray, r: np.ndarray, theta: np.ndarray, kind: int, rows: np.ndarray,
               g: np.ndarray, H: np.ndarray) -> float:
    """The terms of the rows of X in the canonical loss at θ: Σ (μ(zᵢ) − rᵢ)xᵢ added to g,
    Σ μ̇(zᵢ)xᵢxᵢᵀ to the lower triangle of H, and Σ b(zᵢ) − rᵢzᵢ returned (zᵢ = xᵢᵀθ);
    `rows` (3, ≥ len(X)) is scratch for the per-row values."""
    n = X.shape[0]
    residual, weight, term = rows[0], rows[1], rows[2]
    for i in range(n):
        z = dot(X[i], theta)
        mu, mudot, b = mean_values(kind, z)
        residual[i] = mu - r[i]
        weight[i] = mudot
        term[i] = b - r[i] * z
    for a in range(X.shape[1]):
        g[a] += _column_sum(residual, X, a, n)
        for c in range(a + 1):
            H[a, c] += _gram_sum(weight, X, a, c, n)
    return _sum(term, n)


@jit
def clear(g: np.ndarray, H: np.ndarray) -> None:
    """g ← 0 and the lower triangle of H ← 0."""
    for a in range(g.shape[0]):
        g[a] = 0.0
        for c in range(a + 1):
            H[a, c] = 0.0


@jit
def finish(g_sum: np.ndarray, H_sum: np.ndarray, loss_sum: float, lam: float,
           theta: np.ndarray, g: np.ndarray, H: np.ndarray) -> float:
    """From the row sums at θ (`accumulate`): g = ∇F(θ) = Σ (μ(zᵢ) − rᵢ)xᵢ + 2λθ and
    H = ∇²F(θ) = Σ μ̇(zᵢ)xᵢxᵢᵀ + 2λI; returns F(θ) = Σ b(zᵢ) − rᵢzᵢ + λ‖θ‖² (docs/glm.md,
    "Reward families and losses"; the paper's Section 4 writes (λ/2)‖θ‖²)."""
    d = theta.shape[0]
    for a in range(d):
        g[a] = g_sum[a] + 2.0 * lam * theta[a]
        for c in range(a):
            H[a, c] = H[c, a] = H_sum[a, c]
        H[a, a] = H_sum[a, a] + 2.0 * lam
    return loss_sum + lam * dot(theta, theta)


def canonical_loss(theta: np.ndarray, X: np.ndarray, r: np.ndarray, link: Link,
                   lam: float) -> float:
    """F(θ) = Σ b(xᵢᵀθ) − rᵢxᵢᵀθ + λ‖θ‖², in the authors' code's regularisation convention
    (the vectorised form of the sums `newton_fit` makes)."""
    z = X @ theta
    return float(np.sum(link.potential(z) - r * z) + lam * (theta @ theta))


def canonical_gradient(theta: np.ndarray, X: np.ndarray, r: np.ndarray, link: Link,
                       lam: float) -> np.ndarray:
    """∇F(θ) = Xᵀ(μ(Xθ) − r) + 2λθ."""
    X, r = _as_rows(X, r)
    out = np.empty(X.shape[1])
    gradient_into(X, r, link.kind, float(lam), np.ascontiguousarray(theta, dtype=float), out)
    return out


@jit
def gradient_into(X: np.ndarray, r: np.ndarray, kind: int, lam: float, theta: np.ndarray,
                  out: np.ndarray) -> None:
    """out = ∇F(θ) = Σ (μ(xᵢᵀθ) − rᵢ)xᵢ + 2λθ over the rows of X (the gradient L-BFGS-B is
    given; `accumulate` sums the same terms with the Hessian's for Newton)."""
    n = X.shape[0]
    residual = np.empty(n)
    for i in range(n):
        residual[i] = mean(kind, dot(X[i], theta)) - r[i]
    for a in range(X.shape[1]):
        out[a] = _column_sum(residual, X, a, n) + 2.0 * lam * theta[a]


def _as_rows(X: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X = np.ascontiguousarray(X, dtype=float)
    return X.reshape(X.shape[0], -1) if X.ndim != 2 else X, np.ascontiguousarray(r, dtype=float)


def bernoulli_nll(theta: np.ndarray, X: np.ndarray, r: np.ndarray, link: Link, lam: float) -> float:
    """−Σ[rᵢ ln μ(zᵢ) + (1−rᵢ) ln(1−μ(zᵢ))] + λ‖θ‖² with stable logs (the `compat` objective)."""
    if link.log_mean is None or link.log_one_minus_mean is None:
        raise ValueError(f"family {link.name!r} has no Bernoulli likelihood")
    z = X @ theta
    ll = r * link.log_mean(z) + (1.0 - r) * link.log_one_minus_mean(z)
    return float(-np.sum(ll) + lam * (theta @ theta))


# -- small dense helpers ---------------------------------------------------------------------

@jit
def abs_max(v: np.ndarray) -> float:
    """max |vᵢ|, NaN if an entry is NaN (numpy's max)."""
    best = 0.0
    for i in range(v.shape[0]):
        a = abs(v[i])
        if a != a:
            return a
        if a > best:
            best = a
    return best


@jit
def sherman_morrison(A_inv: np.ndarray, x: np.ndarray, w: float = 1.0) -> float:
    """In place: A⁻¹ ← (A + w·xxᵀ)⁻¹ (Sherman–Morrison); returns xᵀA⁻¹x of the old A⁻¹."""
    d = x.shape[0]
    u = np.empty(d)
    for i in range(d):
        u[i] = dot(A_inv[i], x)
    q = dot(x, u)
    coefficient = w / (1.0 + w * q)
    for i in range(d):
        cu = coefficient * u[i]
        for j in range(d):
            A_inv[i, j] -= cu * u[j]
    return q


@jit
def quad_form(x: np.ndarray, A: np.ndarray) -> float:
    """xᵀAx."""
    d = x.shape[0]
    total = 0.0
    for i in range(d):
        total += x[i] * dot(A[i], x)
    return total


@jit
def _quad_forms(X: np.ndarray, A: np.ndarray) -> np.ndarray:
    out = np.empty(X.shape[0])
    for k in range(X.shape[0]):
        out[k] = quad_form(X[k], A)
    return out


def quad_forms(X: np.ndarray, A: np.ndarray) -> np.ndarray:
    """Row-wise xᵢᵀAxᵢ for the rows of X."""
    return _quad_forms(np.ascontiguousarray(X, dtype=float), np.ascontiguousarray(A, dtype=float))


@jit
def log_det_spd(A: np.ndarray) -> float:
    """ln det A of a symmetric positive definite A by its Cholesky factor, −∞ when A is not
    positive definite (a zero matrix, say)."""
    factor = np.empty_like(A)
    if not cholesky_into(A, factor):
        return -math.inf
    return log_det(factor)


@jit
def secular_root(weights: np.ndarray, eigs: np.ndarray, target: float, upper: float) -> float:
    """ν ∈ [0, upper] with Σ wᵢ/(eᵢ + ν)² = target, given Σ wᵢ/eᵢ² > target.

    This is the multiplier of a Euclidean projection onto an ellipsoid written in the eigenbasis
    of its matrix. Safeguarded Newton on 1/√s(ν) (nearly linear in ν) inside a bracket; the
    result is clipped to `upper` when the root lies beyond it.
    """
    m = weights.shape[0]
    lo = 0.0
    total = 0.0
    for i in range(m):
        total += weights[i]
    hi = math.sqrt(total / target)  # s(hi) ≤ Σw/hi² = target
    if hi >= upper:
        s_upper = 0.0
        for i in range(m):
            s_upper += weights[i] / (eigs[i] + upper) ** 2
        if s_upper >= target:
            return upper
        hi = upper
    root_target = 1.0 / math.sqrt(target)
    nu = lo
    for _ in range(200):
        s = 0.0
        s3 = 0.0
        for i in range(m):
            denom = eigs[i] + nu
            s += weights[i] / denom**2
            s3 += weights[i] / denom**3
        if s > target:
            lo = nu
        else:
            hi = nu
        phi = 1.0 / math.sqrt(s) - root_target
        if phi == 0.0 or hi - lo <= 4e-16 * max(1.0, hi):
            break
        nu_new = nu - phi / (s3 / s**1.5)
        if not lo < nu_new < hi:
            nu_new = 0.5 * (lo + hi)
        if nu_new == nu:
            break
        nu = nu_new
    return nu


@jit
def symmetric_eigen(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (ascending) and orthonormal eigenvectors (columns) of a symmetric matrix."""
    return np.linalg.eigh(A)


@jit
def rotate_into(Q: np.ndarray, v: np.ndarray, out: np.ndarray) -> None:
    """out = Qᵀv."""
    d = v.shape[0]
    for j in range(d):
        total = 0.0
        for i in range(d):
            total += Q[i, j] * v[i]
        out[j] = total


@jit
def unrotate_into(Q: np.ndarray, v: np.ndarray, out: np.ndarray) -> None:
    """out = Qv."""
    for i in range(v.shape[0]):
        out[i] = dot(Q[i], v)


@jit
def ball_model_minimiser(H: np.ndarray, b: np.ndarray, cap: float, out: np.ndarray) -> None:
    """out = argmin_{‖θ‖ ≤ cap} ½θᵀHθ − bᵀθ for H positive definite: θ = (H + νI)⁻¹b on the
    sphere."""
    eigs, Q = symmetric_eigen(H)
    d = b.shape[0]
    bhat = np.empty(d)
    rotate_into(Q, b, bhat)
    weights = np.empty(d)
    for j in range(d):
        weights[j] = bhat[j] * bhat[j]
    nu = secular_root(weights, eigs, cap * cap, math.inf)
    for j in range(d):
        bhat[j] = bhat[j] / (eigs[j] + nu)
    unrotate_into(Q, bhat, out)


@jit
def project_ball_metric_into(u: np.ndarray, V: np.ndarray, radius: float, out: np.ndarray) -> None:
    """out = argmin_{‖θ‖ ≤ radius} ‖θ − u‖_V for V symmetric positive definite."""
    d = u.shape[0]
    if dot(u, u) <= radius * radius:
        for j in range(d):
            out[j] = u[j]
        return
    eigs, Q = symmetric_eigen(V)
    uhat = np.empty(d)
    rotate_into(Q, u, uhat)
    # θ = (V + νI)⁻¹Vu; in the eigenbasis θ̂ᵢ = eᵢûᵢ/(eᵢ + ν), so ‖θ‖² = Σ (eᵢûᵢ)²/(eᵢ + ν)².
    weights = np.empty(d)
    for j in range(d):
        weights[j] = (eigs[j] * uhat[j]) ** 2
    nu = secular_root(weights, eigs, radius * radius, math.inf)
    for j in range(d):
        uhat[j] = eigs[j] * uhat[j] / (eigs[j] + nu)
    unrotate_into(Q, uhat, out)



def project_ball_metric(u: np.ndarray, V: np.ndarray, radius: float) -> np.ndarray:
    """argmin_{‖θ‖ ≤ radius} ‖θ − u‖_V for V symmetric positive definite (eigenbasis solve)."""
    u = np.array(u, dtype=float)
    out = np.empty_like(u)
    project_ball_metric_into(u, np.ascontiguousarray(V, dtype=float), float(radius), out)
    return out


# -- the Newton fit --------------------------------------------------------------------------

class FitArrays(NamedTuple):
    """The data of a fit growing by one row per round and its Newton fit's working arrays:
    rows X (capacity, d) and rewards r; `state` (int64: rows, rows whose terms at the last
    solution are summed, which side holds those sums); the last solution; the row sums of
    `accumulate` (the gradient's, Hessian's and loss's) on two sides, at the iterate and at
    the trial point; scratch rows (3, capacity), vectors (4, d) and matrices (2, d, d)."""

    X: np.ndarray
    r: np.ndarray
    rows: np.ndarray
    state: np.ndarray
    last: np.ndarray
    g_sums: np.ndarray
    H_sums: np.ndarray
    loss_sums: np.ndarray
    work: np.ndarray
    matrices: np.ndarray


def fit_arrays(capacity: int, d: int) -> FitArrays:
    """Empty `FitArrays` for `capacity` rows of width d."""
    capacity = max(int(capacity), 1)
    return FitArrays(np.empty((capacity, d)), np.empty(capacity), np.empty((3, capacity)),
                     np.zeros(3, dtype=np.int64),
                     np.zeros(d), np.zeros((2, d)), np.zeros((2, d, d)), np.zeros(2),
                     np.empty((4, d)), np.empty((2, d, d)))


def grown(fit: FitArrays, capacity: int) -> FitArrays:
    """`fit` with room for `capacity` rows, its rows and sums kept."""
    n = int(fit.state[ROWS])
    out = fit_arrays(capacity, fit.X.shape[1])
    out.X[:n] = fit.X[:n]
    out.r[:n] = fit.r[:n]
    for kept, new in zip(fit[3:8], out[3:8], strict=True):
        new[...] = kept
    return out


@jit
def _kkt_on_sphere(theta: np.ndarray, g: np.ndarray, threshold: float, cap: float,
                   work: np.ndarray) -> bool:
    """θ on the sphere ‖θ‖ = cap minimises F over the ball: −∇F = νθ with ν ≥ 0, to tolerance."""
    norm2 = dot(theta, theta)
    if norm2 < (cap * (1.0 - 1e-10)) ** 2:
        return False
    radial = dot(g, theta) / norm2
    for j in range(theta.shape[0]):
        work[j] = g[j] - radial * theta[j]
    return radial <= 0.0 and abs_max(work) <= threshold


@jit
def newton_fit(fit: FitArrays, theta: np.ndarray, kind: int, lam: float, cap: float, tol: float,
               max_iter: int, counts: np.ndarray) -> bool:
    """Damped Newton/IRLS on F(θ) = Σ b(xᵢᵀθ) − rᵢxᵢᵀθ + λ‖θ‖² over every row of `fit`
    (docs/glm.md, "MLE solvers"), θ updated in place from the warm start; the fit is counted
    in `counts` and its success returned (no rows: θ as given, nothing counted).

    Armijo backtracking (full step in the rounding regime, where the Newton decrement is below
    the precision of F); ‖θ‖ ≤ cap (math.inf: no cap) by rescaling the start onto the ball and
    by the model's minimiser over the ball for a step leaving it. Stops when ‖∇F‖_∞ ≤
    tol·max(1, n), or when the cap is active and the capped problem's KKT conditions hold to
    that tolerance (success), or after `max_iter` steps, a Hessian that is not positive
    definite, an ascent direction or a failed line search. Where θ is the last solution, the
    row sums known there are reused and only the new rows' terms added.
    """
    n = fit.state[ROWS]
    d = theta.shape[0]
    if n == 0:
        for j in range(d):
            fit.last[j] = theta[j]
        fit.state[KNOWN] = 0
        return True
    side = fit.state[SIDE]
    known_rows = fit.state[KNOWN]
    known = known_rows > 0
    for j in range(d):
        known = known and theta[j] == fit.last[j]
    if known:
        fit.loss_sums[side] += accumulate(fit.X[known_rows:n], fit.r[known_rows:n], theta, kind,
                                          fit.rows, fit.g_sums[side], fit.H_sums[side])
    g, p, new, scratch = fit.work[0], fit.work[1], fit.work[2], fit.work[3]
    H, factor = fit.matrices[0], fit.matrices[1]
    norm = math.sqrt(dot(theta, theta))
    if norm > cap:
        for j in range(d):
            theta[j] *= cap / norm
        known = False
    if not known:
        clear(fit.g_sums[side], fit.H_sums[side])
        fit.loss_sums[side] = accumulate(fit.X[:n], fit.r[:n], theta, kind, fit.rows,
                                         fit.g_sums[side], fit.H_sums[side])
    F = finish(fit.g_sums[side], fit.H_sums[side], fit.loss_sums[side], lam, theta, g, H)
    threshold = tol * max(1.0, float(n))
    capped = False
    success = False
    steps = 0
    while True:
        if abs_max(g) <= threshold or (capped and _kkt_on_sphere(theta, g, threshold, cap,
                                                                 scratch)):
            success = True
            break
        if steps == max_iter:
            break
        if not cholesky_into(H, factor):
            break
        solve_lower_into(factor, g, scratch)
        solve_lower_t_into(factor, scratch, p)
        for j in range(d):
            p[j] = -p[j]
            new[j] = theta[j] + p[j]
        if dot(new, new) > cap * cap:
            # minimise the quadratic model over the ball instead; the segment stays inside
            for j in range(d):
                scratch[j] = dot(H[j], theta) - g[j]
            ball_model_minimiser(H, scratch, cap, p)
            for j in range(d):
                p[j] -= theta[j]
            capped = True
        slope = dot(g, p)
        if not slope < 0.0:
            break
        steps += 1
        rounding = -slope <= 1e-12 * (1.0 + abs(F))
        step = 1.0
        accepted = False
        F_new = F
        trial = 1 - side
        for _ in range(LINE_SEARCH_TRIALS):
            for j in range(d):
                new[j] = theta[j] + step * p[j]
            clear(fit.g_sums[trial], fit.H_sums[trial])
            fit.loss_sums[trial] = accumulate(fit.X[:n], fit.r[:n], new, kind, fit.rows,
                                              fit.g_sums[trial], fit.H_sums[trial])
            F_new = fit.loss_sums[trial] + lam * dot(new, new)
            if rounding or F_new <= F + 1e-4 * step * slope:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            break
        same = True
        for j in range(d):
            same = same and new[j] == theta[j]
        if same:
            break
        for j in range(d):
            theta[j] = new[j]
        side = trial
        F = finish(fit.g_sums[side], fit.H_sums[side], fit.loss_sums[side], lam, theta, g, H)
    fit.state[SIDE] = side
    fit.state[KNOWN] = n
    for j in range(d):
        fit.last[j] = theta[j]
    record(counts, success, steps, capped)
    return success


@jit
def add_row(fit: FitArrays, x: np.ndarray, reward: float) -> bool:
    """Append the observation (x, r); False (nothing added) when the arrays are full."""
    n = fit.state[ROWS]
    if n == fit.X.shape[0]:
        return False
    for j in range(x.shape[0]):
        fit.X[n, j] = x[j]
    fit.r[n] = reward
    fit.state[ROWS] = n + 1
    return True


def newton_mle(
    X: np.ndarray,
    r: np.ndarray,
    link: Link,
    lam: float,
    theta0: np.ndarray,
    *,
    cap: float | None = None,
    tol: float = 1e-8,
    max_iter: int = 50,
    stats: SolverStats | None = None,
) -> tuple[np.ndarray, bool]:
    """`newton_fit` on the rows of X from θ₀ (‖θ‖ ≤ cap unless None); returns (θ, success)."""
    X, r = _as_rows(X, r)
    n, d = X.shape
    theta = np.array(theta0, dtype=float)
    if n == 0:
        return theta, True
    fit = fit_arrays(n, d)
    fit.X[:] = X
    fit.r[:] = r
    fit.state[ROWS] = n
    counts = (stats or SolverStats()).counts
    success = newton_fit(fit, theta, link.kind, float(lam),
                         math.inf if cap is None else float(cap), float(tol), int(max_iter),
                         counts)
    return theta, bool(success)


class GrowingNewton:
    """Newton MLE over a data set that grows by one row per round (GLM-UCB's per-round fit):
    `FitArrays` filled by `add_row` and fitted by `newton_fit`, which reuses the row sums at the
    last solution for a fit warm-started there."""

    def __init__(
        self,
        d: int,
        capacity: int,
        link: Link,
        lam: float,
        *,
        cap: float | None = None,
        tol: float = 1e-8,
        max_iter: int = 50,
        stats: SolverStats | None = None,
    ) -> None:
        self.link, self.lam, self.tol, self.max_iter = link, float(lam), float(tol), int(max_iter)
        self.cap = math.inf if cap is None else float(cap)
        self.stats = stats if stats is not None else SolverStats()
        self.arrays = fit_arrays(capacity, d)

    @property
    def n(self) -> int:
        """Rows so far."""
        return int(self.arrays.state[ROWS])

    @property
    def X(self) -> np.ndarray:
        return self.arrays.X

    @property
    def r(self) -> np.ndarray:
        return self.arrays.r

    def reserve(self, rows: int) -> None:
        """Room for `rows` more rows."""
        need = self.n + int(rows)
        if need > self.arrays.X.shape[0]:
            self.arrays = grown(self.arrays, max(need, 2 * self.arrays.X.shape[0]))

    def add(self, x: np.ndarray, r: float) -> None:
        """Append one observation (x, r)."""
        self.reserve(1)
        add_row(self.arrays, np.ascontiguousarray(x, dtype=float), float(r))

    def solve(self, theta0: np.ndarray) -> tuple[np.ndarray, bool]:
        """Fit on all rows so far, warm-started at θ₀; returns (θ, success)."""
        theta = np.array(theta0, dtype=float)
        success = newton_fit(self.arrays, theta, self.link.kind, self.lam, self.cap, self.tol,
                             self.max_iter, self.stats.counts)
        return theta, bool(success)


def compat_mle(
    X: np.ndarray,
    r: np.ndarray,
    link: Link,
    lam: float,
    theta0: np.ndarray,
    *,
    stats: SolverStats | None = None,
) -> tuple[np.ndarray, bool]:
    """L-BFGS-B on (Bernoulli NLL, canonical gradient), default options (the authors' solver).

    For probit the objective and gradient do not match, as in the reference code; the returned
    `success` flag is scipy's.
    """
    theta0 = np.array(theta0, dtype=float)
    if X.shape[0] == 0:
        return theta0, True
    log_mean, log_one_minus = link.log_mean, link.log_one_minus_mean
    if log_mean is None or log_one_minus is None:
        raise ValueError(f"family {link.name!r} has no Bernoulli likelihood")
    X, r = _as_rows(X, r)
    one_minus_r = 1.0 - r
    kind, lam = link.kind, float(lam)
    d = X.shape[1]

    def fun(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = X @ theta
        ll = r @ log_mean(z) + one_minus_r @ log_one_minus(z)
        f = -float(ll) + lam * float(theta @ theta)
        grad = np.empty(d)
        gradient_into(X, r, kind, lam, np.ascontiguousarray(theta, dtype=float), grad)
        return f, grad

    from scipy.optimize import minimize  # heavy import: only jobs that fit by L-BFGS-B

    res = minimize(fun, theta0, jac=True, method="L-BFGS-B")
    success = bool(res.success)
    if stats is not None:
        stats.record(success, int(res.nit))
    return np.asarray(res.x, dtype=float), success


def solve_mle(
    solver: str,
    X: np.ndarray,
    r: np.ndarray,
    link: Link,
    lam: float,
    theta0: np.ndarray,
    *,
    cap: float | None = None,
    stats: SolverStats | None = None,
) -> tuple[np.ndarray, bool]:
    """Dispatch to the `compat` (L-BFGS-B) or `newton` solver by name."""
    if solver == "newton":
        return newton_mle(X, r, link, lam, theta0, cap=cap, stats=stats)
    if solver == "compat":
        return compat_mle(X, r, link, lam, theta0, stats=stats)
    raise ValueError(f"unknown solver {solver!r}")
