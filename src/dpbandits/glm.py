"""GLM maximum-likelihood solvers and small linear-algebra helpers (docs/glm.md, "MLE solvers")."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpbandits import _newton as compiled_newton
from dpbandits import small_linalg
from dpbandits.links import Link
from dpbandits.scipy_kernels import special

expit, ndtr = special.expit, special.ndtr

SOLVERS = ("compat", "newton")
COMPILED_LINKS = {"probit": 1, "logistic": 2}  # the links `_newton.newton` fits
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@dataclass
class SolverStats:
    """Counts kept across the fits of one run: fits, failures, norm-cap events, iterations."""

    fits: int = 0
    failures: int = 0
    capped: int = 0
    iterations: int = 0

    def record(self, success: bool, iterations: int = 0, capped: bool = False) -> None:
        self.fits += 1
        self.failures += int(not success)
        self.capped += int(capped)
        self.iterations += iterations


def canonical_loss(
    theta: np.ndarray, X: np.ndarray, r: np.ndarray, link: Link, lam: float
) -> float:
    """F(θ) = Σ b(xᵢᵀθ) − rᵢxᵢᵀθ + λ‖θ‖², in the authors' code's regularisation convention.

    docs/glm.md, "Reward families and losses" (the paper, Section 4, writes (λ/2)‖θ‖²).
    """
    z = X @ theta
    return float(np.sum(link.potential(z) - r * z) + lam * (theta @ theta))


def canonical_gradient(
    theta: np.ndarray, X: np.ndarray, r: np.ndarray, link: Link, lam: float
) -> np.ndarray:
    """∇F(θ) = Xᵀ(μ(Xθ) − r) + 2λθ."""
    return X.T @ (link.mean(X @ theta) - r) + 2.0 * lam * theta


def bernoulli_nll(theta: np.ndarray, X: np.ndarray, r: np.ndarray, link: Link, lam: float) -> float:
    """−Σ[rᵢ ln μ(zᵢ) + (1−rᵢ) ln(1−μ(zᵢ))] + λ‖θ‖² with stable logs (the `compat` objective)."""
    if link.log_mean is None or link.log_one_minus_mean is None:
        raise ValueError(f"family {link.name!r} has no Bernoulli likelihood")
    z = X @ theta
    ll = r * link.log_mean(z) + (1.0 - r) * link.log_one_minus_mean(z)
    return float(-np.sum(ll) + lam * (theta @ theta))


Values = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def link_values(link: Link, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(μ(z), μ̇(z), b(z)) in one pass, sharing the special-function evaluations."""
    if link.name == "probit":
        Phi = ndtr(z)
        phi = np.exp(np.square(z) * -0.5) * _INV_SQRT_2PI
        return Phi, phi, z * Phi + phi
    if link.name == "logistic":
        p = expit(z)
        return p, p * (1.0 - p), np.logaddexp(0.0, z)
    return link.mean(z), link.dot(z), link.potential(z)


def _link_values_into(link: Link, z: np.ndarray, out: Values) -> None:
    """`link_values(link, z)` written into the (μ, μ̇, b) buffers out[1:] (out[0] is z's).

    The same elementwise operations in the same order as `link_values`, without temporaries.
    """
    _, mu, mudot, pot = out
    if link.name == "probit":
        ndtr(z, out=mu)
        np.square(z, out=pot)
        np.multiply(pot, -0.5, out=pot)
        np.exp(pot, out=mudot)
        np.multiply(mudot, _INV_SQRT_2PI, out=mudot)
        np.multiply(z, mu, out=pot)
        np.add(pot, mudot, out=pot)
    elif link.name == "logistic":
        expit(z, out=mu)
        np.subtract(1.0, mu, out=mudot)
        np.multiply(mu, mudot, out=mudot)
        np.logaddexp(0.0, z, out=pot)
    else:
        mu[...] = link.mean(z)
        mudot[...] = link.dot(z)
        pot[...] = link.potential(z)


class _Buffers:
    """Preallocated arrays of a Newton fit: (z, μ, μ̇, b) at the iterate and at the trial point,
    the Hessian weights μ̇ᵢxᵢ (rows of an n×d array) and the residuals μ − r."""

    def __init__(self, capacity: int, d: int) -> None:
        self.cur: Values = tuple(np.empty(capacity) for _ in range(4))  # type: ignore[assignment]
        self.trial: Values = tuple(np.empty(capacity) for _ in range(4))  # type: ignore[assignment]
        self.weighted = np.empty((capacity, d))
        self.resid = np.empty(capacity)
        self._ridge: tuple[float, np.ndarray] | None = None

    def ridge(self, lam: float) -> np.ndarray:
        """2λI, the Hessian of the regulariser λ‖θ‖² (kept for the last λ asked for)."""
        if self._ridge is None or self._ridge[0] != lam:
            self._ridge = (lam, 2.0 * lam * np.eye(self.weighted.shape[1]))
        return self._ridge[1]

    def grow(self, capacity: int) -> None:
        """Enlarge to `capacity` rows, keeping the values at the iterate."""
        old = self.cur[0].shape[0]
        cur = tuple(np.empty(capacity) for _ in range(4))
        for new, kept in zip(cur, self.cur, strict=True):
            new[:old] = kept
        self.cur = cur  # type: ignore[assignment]
        self.trial = tuple(np.empty(capacity) for _ in range(4))  # type: ignore[assignment]
        self.weighted = np.empty((capacity, self.weighted.shape[1]))
        self.resid = np.empty(capacity)


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
    """Damped Newton/IRLS on the canonical loss, Armijo backtracking, ‖θ‖ ≤ cap.

    Stops when ‖∇F‖_∞ ≤ tol·max(1, n) (or, when the cap is active, when the KKT conditions of
    the capped problem hold to that tolerance) or after `max_iter` Newton steps. Returns
    (θ, success).
    """
    X = np.require(X, dtype=float, requirements=["C", "A"])
    n, d = X.shape
    theta = np.array(theta0, dtype=float)
    if n == 0:
        return theta, True
    r = np.require(r, dtype=float, requirements=["C", "A"])
    return _newton(X, np.ascontiguousarray(X.T), r, link, lam, theta, _Buffers(n, d), False, cap,
                   tol, max_iter, stats)


def _newton(
    X: np.ndarray,
    columns: np.ndarray,
    r: np.ndarray,
    link: Link,
    lam: float,
    theta: np.ndarray,
    buffers: _Buffers,
    known: bool,
    cap: float | None,
    tol: float,
    max_iter: int,
    stats: SolverStats | None,
) -> tuple[np.ndarray, bool]:
    """Newton core on n ≥ 1 rows from θ; `columns` is Xᵀ with contiguous rows (read by
    `numpy_newton` only).

    `known`: buffers.cur holds (z, μ, μ̇, b) at θ on the n rows; on return it holds them at
    the returned θ. Compiled (`_newton.newton`, the bits of `numpy_newton`: tests/test_glm.py)
    for the probit and logistic links, `numpy_newton` for the others and where scipy's special
    functions are not ufuncs. The compiled fit does not consult numpy's floating-point error
    settings (`np.errstate`): where numpy would warn, e.g. on exp underflow, it is silent.
    """
    code = compiled_fit_code(link)
    if code is None:
        return numpy_newton(X, columns, r, link, lam, theta, buffers, known, cap, tol,
                            max_iter, stats)
    theta, success, steps, capped, swapped = compiled_newton.newton(
        X, r, theta, buffers.cur, buffers.trial, buffers.weighted, buffers.resid, code, lam,
        cap, tol, max_iter, known,
    )
    if swapped:
        buffers.cur, buffers.trial = buffers.trial, buffers.cur
    if stats is not None:
        stats.record(success, steps, capped)
    return theta, success


def compiled_fit_code(link: Link) -> int | None:
    """`_newton.newton`'s code of the link, None where `numpy_newton` fits it."""
    return COMPILED_LINKS.get(link.name) if _COMPILED_BOUND else None


def numpy_newton(
    X: np.ndarray,
    columns: np.ndarray,
    r: np.ndarray,
    link: Link,
    lam: float,
    theta: np.ndarray,
    buffers: _Buffers,
    known: bool,
    cap: float | None,
    tol: float,
    max_iter: int,
    stats: SolverStats | None,
) -> tuple[np.ndarray, bool]:
    """`_newton` by numpy calls: θ is the caller's copy, rescaled in place onto the cap when
    outside."""
    n, d = X.shape
    if cap is not None:
        norm = math.sqrt(theta @ theta)
        if norm > cap:
            theta *= cap / norm
            known = False
    cur, trial = buffers.cur, buffers.trial
    current = (cur[0][:n], cur[1][:n], cur[2][:n], cur[3][:n])
    values = (trial[0][:n], trial[1][:n], trial[2][:n], trial[3][:n])
    z, mu, mudot, pot = current
    if not known:
        np.matmul(X, theta, out=z)
        _link_values_into(link, z, (z, mu, mudot, pot))
    XT = X.T
    resid = buffers.resid[:n]
    weighted_t = buffers.weighted[:n].T
    threshold = tol * max(1.0, float(n))
    ridge = buffers.ridge(lam)
    two_lam = 2.0 * lam
    capped = False
    success = False
    steps = 0
    F = float(pot.sum() - r @ z) + lam * float(theta @ theta)
    while True:
        np.subtract(mu, r, out=resid)
        g = XT @ resid
        g += two_lam * theta
        if float(np.abs(g).max()) <= threshold or (
            capped and _kkt_on_sphere(theta, g, threshold, cap)  # type: ignore[arg-type]
        ):
            success = True
            break
        if steps == max_iter:
            break
        np.multiply(columns, mudot, out=weighted_t)
        H = weighted_t @ X
        H += ridge
        try:
            p = -small_linalg.solve(H, g)
        except np.linalg.LinAlgError:
            break
        if cap is not None:
            moved = theta + p
            if float(moved @ moved) > cap * cap:
                # minimise the quadratic model over the ball instead; the segment stays inside
                p = _ball_model_minimiser(H, H @ theta - g, cap) - theta
                capped = True
        slope = float(g @ p)
        if not slope < 0.0:
            break
        steps += 1
        # In the rounding regime (Newton decrement below the precision of F) take the full step.
        rounding = -slope <= 1e-12 * (1.0 + abs(F))
        step = 1.0
        accepted = False
        z_new, pot_new = values[0], values[3]
        for _ in range(31):
            new = theta + step * p
            np.matmul(X, new, out=z_new)
            _link_values_into(link, z_new, values)
            F_new = float(pot_new.sum() - r @ z_new) + lam * float(new @ new)
            if rounding or F_new <= F + 1e-4 * step * slope:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            break
        if bool((new == theta).all()):
            break
        theta, F = new, F_new
        cur, trial = trial, cur
        current, values = values, current
        z, mu, mudot, pot = current
    buffers.cur, buffers.trial = cur, trial
    if stats is not None:
        stats.record(success, steps, capped)
    return theta, success


class GrowingNewton:
    """Newton MLE over a data set that grows by one row per round (GLM-UCB's per-round fit).

    Keeps the data in preallocated buffers (rows and columns) with the link values at the last
    solution, so a fit warm-started there evaluates the link only on the new rows before its
    first Newton step. Results are those of `newton_mle` on the same data and warm start (up to
    the rounding of xᵢᵀθ, which BLAS may sum differently for a block of rows than for all rows).
    """

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
        self.link, self.lam, self.cap, self.tol, self.max_iter = link, lam, cap, tol, max_iter
        self.stats = stats
        capacity = max(int(capacity), 1)
        self.X = np.empty((capacity, d))
        self.r = np.empty(capacity)
        self._columns = np.empty((d, capacity))  # Xᵀ, filled up to _filled rows by `solve`
        self._filled = 0
        self._buffers = _Buffers(capacity, d)
        self.n = 0
        self._theta: np.ndarray | None = None  # the last solution
        self._known = 0  # rows whose link values at the last solution are in the buffers

    def add(self, x: np.ndarray, r: float) -> None:
        """Append one observation (x, r)."""
        n = self.n
        if n == self.X.shape[0]:
            capacity = 2 * n
            self.X = np.concatenate([self.X, np.empty_like(self.X)])
            self.r = np.concatenate([self.r, np.empty_like(self.r)])
            columns = np.empty((self.X.shape[1], capacity))
            columns[:, : self._filled] = self._columns[:, : self._filled]
            self._columns = columns
            self._buffers.grow(capacity)
        self.X[n] = x
        self.r[n] = r
        self.n = n + 1

    def solve(self, theta0: np.ndarray) -> tuple[np.ndarray, bool]:
        """Fit on all rows so far, warm-started at θ₀; returns (θ, success)."""
        n = self.n
        theta = np.array(theta0, dtype=float)
        if n == 0:
            self._theta, self._known = theta.copy(), 0
            return theta, True
        X = self.X[:n]
        if self._filled < n and compiled_fit_code(self.link) is None:  # Xᵀ: the numpy fit's
            self._columns[:, self._filled : n] = X[self._filled :].T
            self._filled = n
        known = self._theta is not None and self._known > 0 and bool(
            np.array_equal(theta0, self._theta)
        )
        if known:
            old = self._known
            cur = tuple(a[old:n] for a in self._buffers.cur)
            cur[0][...] = X[old:] @ self._theta
            _link_values_into(self.link, cur[0], cur)  # type: ignore[arg-type]
        theta, success = _newton(
            X, self._columns[:, :n], self.r[:n], self.link, self.lam, theta, self._buffers,
            known, self.cap, self.tol, self.max_iter, self.stats,
        )
        self._theta, self._known = theta.copy(), n
        return theta, success


def _kkt_on_sphere(theta: np.ndarray, g: np.ndarray, threshold: float, cap: float) -> bool:
    """θ on the sphere ‖θ‖ = cap minimises F over the ball: −∇F = νθ with ν ≥ 0, to tolerance."""
    norm2 = float(theta @ theta)
    if norm2 < (cap * (1.0 - 1e-10)) ** 2:
        return False
    radial = float(g @ theta) / norm2
    tangential = g - radial * theta
    return radial <= 0.0 and float(np.max(np.abs(tangential))) <= threshold


def _ball_model_minimiser(H: np.ndarray, b: np.ndarray, cap: float) -> np.ndarray:
    """argmin_{‖θ‖ ≤ cap} ½θᵀHθ − bᵀθ for H positive definite: θ = (H + νI)⁻¹b on the sphere."""
    eigs, Q = np.linalg.eigh(H)
    bhat = Q.T @ b
    nu = secular_root(bhat * bhat, eigs, cap * cap, upper=math.inf)
    return Q @ (bhat / (eigs + nu))


def _bind_compiled() -> bool:
    """Bind `_newton` to scipy's special ufuncs and numpy's solve; False where scipy's `ndtr`
    and `expit` are not ufuncs (its array-API wrappers): `numpy_newton` then fits."""
    try:
        compiled_newton.bind(special, np.linalg.solve, np.linalg.LinAlgError,
                             _ball_model_minimiser)
    except (AttributeError, RuntimeError):
        return False
    return True


_COMPILED_BOUND = _bind_compiled()


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
    mean = link.mean
    one_minus_r = 1.0 - r

    def fun(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = X @ theta
        ll = r @ log_mean(z) + one_minus_r @ log_one_minus(z)
        f = -float(ll) + lam * float(theta @ theta)
        grad = X.T @ (mean(z) - r) + 2.0 * lam * theta
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


def sherman_morrison(A_inv: np.ndarray, x: np.ndarray, w: float = 1.0) -> float:
    """In place: A⁻¹ ← (A + w·xxᵀ)⁻¹ (Sherman–Morrison); returns xᵀA⁻¹x of the old A⁻¹."""
    u = A_inv @ x
    q = float(x @ u)
    A_inv -= (w / (1.0 + w * q)) * (u[:, None] * u)
    return q


def quad_forms(X: np.ndarray, A: np.ndarray) -> np.ndarray:
    """Row-wise xᵢᵀAxᵢ for the rows of X."""
    return small_linalg.einsum("ij,ij->i", X @ A, X)


def logdet(A: np.ndarray) -> float:
    """log det A via slogdet, −∞ when the sign is ≤ 0."""
    sign, value = small_linalg.slogdet(A)
    return value if sign > 0 else -math.inf


def secular_root(weights: np.ndarray, eigs: np.ndarray, target: float, upper: float) -> float:
    """ν ∈ [0, upper] with Σ wᵢ/(eᵢ + ν)² = target, given Σ wᵢ/eᵢ² > target.

    This is the multiplier of a Euclidean projection onto an ellipsoid written in the eigenbasis
    of its matrix. Safeguarded Newton on 1/√s(ν) (nearly linear in ν) inside a bracket; the
    result is clipped to `upper` when the root lies beyond it.
    """
    lo = 0.0
    hi = math.sqrt(float(np.sum(weights)) / target)  # s(hi) ≤ Σw/hi² = target
    if hi >= upper:
        if float(np.sum(weights / (eigs + upper) ** 2)) >= target:
            return upper
        hi = upper
    root_target = 1.0 / math.sqrt(target)
    nu = lo
    for _ in range(200):
        denom = eigs + nu
        s = float(np.sum(weights / denom**2))
        if s > target:
            lo = nu
        else:
            hi = nu
        phi = 1.0 / math.sqrt(s) - root_target
        if phi == 0.0 or hi - lo <= 4e-16 * max(1.0, hi):
            break
        dphi = float(np.sum(weights / denom**3)) / s**1.5
        nu_new = nu - phi / dphi
        if not lo < nu_new < hi:
            nu_new = 0.5 * (lo + hi)
        if nu_new == nu:
            break
        nu = nu_new
    return nu


def project_ball_metric(u: np.ndarray, V: np.ndarray, radius: float) -> np.ndarray:
    """argmin_{‖θ‖ ≤ radius} ‖θ − u‖_V for V symmetric positive definite (eigenbasis solve)."""
    if float(u @ u) <= radius * radius:
        return u.copy()
    eigs, Q = np.linalg.eigh(V)
    uhat = Q.T @ u
    # θ = (V + νI)⁻¹Vu; in the eigenbasis θ̂ᵢ = eᵢûᵢ/(eᵢ + ν), so ‖θ‖² = Σ (eᵢûᵢ)²/(eᵢ + ν)².
    weights = (eigs * uhat) ** 2
    nu = secular_root(weights, eigs, radius * radius, upper=math.inf)
    return Q @ (eigs * uhat / (eigs + nu))
