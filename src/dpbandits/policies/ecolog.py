"""ECOLog (Faury et al. 2022) as the authors' code runs it (docs/glm.md, "ECOLog")."""

from __future__ import annotations

import logging
import math
from typing import Any, ClassVar

import numpy as np

from dpbandits.contract import OutcomeTables, ProblemInfo
from dpbandits.glm import rotate_into, secular_root, sherman_morrison, symmetric_eigen
from dpbandits.jit import jit
from dpbandits.linalg import add_outer, dot
from dpbandits.links import LOGISTIC_KIND, mean_dot, potential
from dpbandits.params import Declaration, boolean, choice, number
from dpbandits.policies._glm_common import confidence_delta, optimistic_index
from dpbandits.policies.base import Policy
from dpbandits.policies.tables import pull

log = logging.getLogger(__name__)

LOGISTIC = np.int64(LOGISTIC_KIND)  # the link's kind as an int64: kernels take it unspecialised
PROJ_LAMBDA_MAX = 1000.0
INSIDE_TOL = 1e-3
BOUNDED_XATOL, BOUNDED_MAXITER = 1e-5, 500  # scipy's minimize_scalar(method="bounded")
# entries of the policy's integer state: rounds seen (n), clamps of radius², σ̇ ratio
# violations, ellipsoid projections, the round of the first violation (−1: none)
N, CLAMPS, VIOLATIONS, PROJECTIONS, FIRST_VIOLATION = 0, 1, 2, 3, 4


@jit
def ecolog_step_size(diam: float) -> float:
    """η = 0.75 / (1/4 + 1/(1 + diam/2)), the step of OnlineStep."""
    return 1.0 / (0.25 + 1.0 / (1.0 + diam / 2.0)) * 0.75


@jit
def ecolog_iterations(diam: float, n: int) -> int:
    """int((1/0.75)·ceil((9/4 + diam/8)·ln(diam/precision))), precision = 1/n."""
    return int((1 / 0.75) * math.ceil((9 / 4 + diam / 8) * math.log(diam / (1.0 / n))))


@jit
def ecolog_gamma(lam0: float, n: int, delta: float) -> float:
    """γ_n = sqrt(λ₀)/2 + (2/sqrt(λ₀))·ln(2·sqrt(1 + n/(4λ₀))/δ)."""
    root = math.sqrt(lam0)
    return root / 2 + 2 * math.log(2 * math.sqrt(1 + n / (4 * lam0)) / delta) / root


@jit
def ecolog_radius_sq(lam0: float, S: float, gamma: float, cum: float) -> float:
    """radius² = 2λ₀S² + (1+S)²γ_n + cum."""
    return 2 * lam0 * S**2 + (1 + S) ** 2 * gamma + cum


@jit
def logistic_nll(z: float, r: float) -> float:
    """Bernoulli negative log-likelihood of reward r at logit z, ln(1 + e^z) − rz."""
    return potential(LOGISTIC, z) - r * z


@jit
def ellipsoid_h(lam: float, weights: np.ndarray, eigs: np.ndarray, target: float) -> float:
    """h(λ) = λS² + Σ wᵢ/(eᵢ + λ), whose minimiser over λ ≥ 0 is the projection's multiplier."""
    total = 0.0
    for i in range(weights.shape[0]):
        total += weights[i] / (eigs[i] + lam)
    return lam * target + total


@jit
def bounded_multiplier(weights: np.ndarray, eigs: np.ndarray, target: float) -> float:
    """The reference's multiplier: argmin of h over [0, 1000] by Brent's bounded search
    (scipy's `minimize_scalar(method="bounded")`, xatol 1e-5, at most 500 evaluations)."""
    sqrt_eps = math.sqrt(2.2e-16)
    golden_mean = 0.5 * (3.0 - math.sqrt(5.0))
    a, b = 0.0, PROJ_LAMBDA_MAX
    fulc = a + golden_mean * (b - a)
    nfc, xf = fulc, fulc
    rat = e = 0.0
    x = xf
    fx = ellipsoid_h(x, weights, eigs, target)
    num = 1
    ffulc = fnfc = fx
    xm = 0.5 * (a + b)
    tol1 = sqrt_eps * abs(xf) + BOUNDED_XATOL / 3.0
    tol2 = 2.0 * tol1
    while abs(xf - xm) > (tol2 - 0.5 * (b - a)):
        golden = True
        if abs(e) > tol1:  # a parabolic step, if acceptable
            golden = False
            r = (xf - nfc) * (fx - ffulc)
            q = (xf - fulc) * (fx - fnfc)
            p = (xf - fulc) * q - (xf - nfc) * r
            q = 2.0 * (q - r)
            if q > 0.0:
                p = -p
            q = abs(q)
            r = e
            e = rat
            if abs(p) < abs(0.5 * q * r) and p > q * (a - xf) and p < q * (b - xf):
                rat = (p + 0.0) / q
                x = xf + rat
                if (x - a) < tol2 or (b - x) < tol2:
                    rat = tol1 * (_sign(xm - xf) + (1.0 if xm - xf == 0 else 0.0))
            else:
                golden = True
        if golden:
            e = a - xf if xf >= xm else b - xf
            rat = golden_mean * e
        x = xf + (_sign(rat) + (1.0 if rat == 0 else 0.0)) * max(abs(rat), tol1)
        fu = ellipsoid_h(x, weights, eigs, target)
        num += 1
        if fu <= fx:
            if x >= xf:
                a = xf
            else:
                b = xf
            fulc, ffulc = nfc, fnfc
            nfc, fnfc = xf, fx
            xf, fx = x, fu
        else:
            if x < xf:
                a = x
            else:
                b = x
            if fu <= fnfc or nfc == xf:
                fulc, ffulc = nfc, fnfc
                nfc, fnfc = x, fu
            elif fu <= ffulc or fulc == xf or fulc == nfc:
                fulc, ffulc = x, fu
        xm = 0.5 * (a + b)
        tol1 = sqrt_eps * abs(xf) + BOUNDED_XATOL / 3.0
        tol2 = 2.0 * tol1
        if num >= BOUNDED_MAXITER:
            break
    return xf


@jit
def _sign(v: float) -> float:
    """numpy's sign of a float: −1, 0 or 1 (NaN for NaN)."""
    if v > 0.0:
        return 1.0
    if v < 0.0:
        return -1.0
    return v


@jit
def online_step(Q: np.ndarray, eigs: np.ndarray, a: np.ndarray, theta_c: np.ndarray,
                slope: float, offset: float, iters: int, S: float, eta: float, exact: bool,
                counts: np.ndarray, out: np.ndarray) -> None:
    """OnlineStep of ECOLog (Faury et al. 2022, Alg. 2) in whitened coordinates, in Ṽ's
    eigenbasis (Ṽ = Q diag(e) Qᵀ, a = Ṽ^{−1/2}x there): projected gradient descent
    z ← ProjEll(z − η(z − z₀ + c(z)·a)) from z₀ = Ṽ^{1/2}θ_c, c = slope·σ(zᵀa) + offset (θ:
    σ(zᵀa) − r; θ̄: 2σ(zᵀa) − 1); out = Ṽ^{−1/2}z.

    Between projections every iterate lies in the span of the last projected point p, z₀ and
    a, so it is carried as coefficients (α, β, s) of z = αp + βz₀ + s·a with the needed inner
    products precomputed; a vector is formed only when the projection test must look at it.
    The projection's multiplier: a safeguarded Newton root of its secular equation (`exact`)
    or the reference's bounded scalar search.
    """
    d = a.shape[0]
    root = np.empty(d)
    inv_eigs = np.empty(d)
    for i in range(d):
        root[i] = math.sqrt(eigs[i])
        inv_eigs[i] = 1.0 / eigs[i]
    z0 = np.empty(d)
    rotate_into(Q, theta_c, z0)
    wa = np.empty(d)
    for i in range(d):
        z0[i] = root[i] * z0[i]
        wa[i] = inv_eigs[i] * a[i]
    Da, Gaa = dot(a, a), dot(a, wa)
    keep = 1.0 - eta
    target = S * S
    limit = target + INSIDE_TOL
    D0 = dot(z0, a)
    G0a = dot(z0, wa)
    G00 = 0.0
    for i in range(d):
        G00 += z0[i] * (inv_eigs[i] * z0[i])
    p = z0.copy()
    y = np.empty(d)
    weights = np.empty(d)
    Dp, Gpp, Gp0, Gpa = D0, G00, G00, G0a
    alpha, beta, s = 1.0, 0.0, 0.0
    for _ in range(iters):
        v = alpha * Dp + beta * D0 + s * Da
        prob = 1.0 / (1.0 + math.exp(-v)) if v > -700.0 else 0.0
        coef = slope * prob + offset
        alpha, beta, s = keep * alpha, keep * beta + eta, keep * s - eta * coef
        q = (alpha * alpha * Gpp + beta * beta * G00 + s * s * Gaa
             + 2.0 * (alpha * beta * Gp0 + alpha * s * Gpa + beta * s * G0a))
        if q < limit:
            continue
        norm2 = 0.0
        for i in range(d):
            y[i] = alpha * p[i] + beta * z0[i] + s * a[i]
            norm2 += (y[i] * y[i]) * inv_eigs[i]
        if norm2 < limit:
            continue
        counts[PROJECTIONS] += 1
        for i in range(d):
            weights[i] = eigs[i] * y[i] * y[i]
        if exact:
            nu = secular_root(weights, eigs, target, PROJ_LAMBDA_MAX)
        else:
            nu = bounded_multiplier(weights, eigs, target)
        Dp = Gpp = Gp0 = Gpa = 0.0
        for i in range(d):
            p[i] = eigs[i] * y[i] / (eigs[i] + nu)
            wp = inv_eigs[i] * p[i]
            Dp += p[i] * a[i]
            Gpp += p[i] * wp
            Gp0 += z0[i] * wp
            Gpa += a[i] * wp
        alpha, beta, s = 1.0, 0.0, 0.0
    for i in range(d):
        y[i] = (alpha * p[i] + beta * z0[i] + s * a[i]) / root[i]
    for i in range(d):
        out[i] = dot(Q[i], y)


@jit
def ecolog_arm(arms: np.ndarray, theta: np.ndarray, V_inv: np.ndarray, lam0: float, S: float,
               delta: float, cum: float, nan_compat: bool, counts: np.ndarray) -> int:
    """ECOLog (Faury et al. 2022, Alg. 2): first argmax of σ(xᵀθ) + radius·‖x‖_{Ṽ⁻¹}, radius²
    = 2λ₀S² + (1+S)²γ_n + cum; a negative radius² is counted and clamped at 0, or plays arm 0
    (`nan_compat`: the reference's NaN indices)."""
    rad2 = ecolog_radius_sq(lam0, S, ecolog_gamma(lam0, counts[N], delta), cum)
    if rad2 < 0.0:
        counts[CLAMPS] += 1
        if nan_compat:
            return 0
        rad2 = 0.0
    return optimistic_index(arms, theta, V_inv, math.sqrt(rad2), LOGISTIC)


@jit
def ecolog_update(V: np.ndarray, V_inv: np.ndarray, theta: np.ndarray, cum: np.ndarray,
                  x: np.ndarray, r: float, t: int, S: float, eta: float, exact: bool,
                  counts: np.ndarray) -> None:
    """ECOLog's update (Faury et al. 2022, Alg. 2): the online steps θ (from θ) and θ̄ (from
    the new θ), Ṽ += σ̇(xᵀθ)xxᵀ (and Ṽ⁻¹), the σ̇(xᵀθ̄)/σ̇(xᵀθ) > 2 check and the
    cumulative-loss term cum += 2(1 + S)(ℓ(xᵀθ̄) − ℓ(xᵀθ)) − ‖θ − θ̄‖_Ṽ/2."""
    d = x.shape[0]
    counts[N] += 1
    eigs, Q = symmetric_eigen(V)
    iters = ecolog_iterations(S, counts[N])
    a = np.empty(d)
    rotate_into(Q, x, a)
    for i in range(d):
        a[i] = a[i] / math.sqrt(eigs[i])
    new = np.empty(d)
    online_step(Q, eigs, a, theta, 1.0, -r, iters, S, eta, exact, counts, new)
    new_bar = np.empty(d)
    online_step(Q, eigs, a, new, 2.0, -1.0, iters, S, eta, exact, counts, new_bar)
    diff = np.empty(d)
    for i in range(d):
        diff[i] = new[i] - new_bar[i]
    vdiff = np.empty(d)
    for i in range(d):
        vdiff[i] = dot(V[i], diff)
    disc = math.sqrt(max(dot(vdiff, diff), 0.0))
    z, z_bar = dot(x, new), dot(x, new_bar)
    s = mean_dot(LOGISTIC, z)
    add_outer(V, x, s)
    sherman_morrison(V_inv, x, s)
    if mean_dot(LOGISTIC, z_bar) > 2.0 * s:
        if counts[VIOLATIONS] == 0:
            counts[FIRST_VIOLATION] = t
        counts[VIOLATIONS] += 1
    cum[0] += 2 * (1 + S) * (logistic_nll(z_bar, r) - logistic_nll(z, r)) - 0.5 * disc
    for i in range(d):
        theta[i] = new[i]


@jit
def ecolog_rounds(tables: OutcomeTables, V: np.ndarray, V_inv: np.ndarray, theta: np.ndarray,
                  cum: np.ndarray, lam0: float, S: float, delta: float, nan_compat: bool,
                  eta: float, exact: bool, counts: np.ndarray) -> None:
    """Every round of ECOLog on pre-drawn tables."""
    for t in range(tables.arms.shape[0]):
        i = ecolog_arm(tables.arms[t], theta, V_inv, lam0, S, delta, cum[0], nan_compat, counts)
        ecolog_update(V, V_inv, theta, cum, tables.arms[t, i], pull(tables, t, i), t, S, eta,
                      exact, counts)


class ECOLog(Policy):
    """ECOLog: online projected-gradient estimate in Ṽ-whitened coordinates (docs/glm.md, "ECOLog").

    The matrix square roots Ṽ^{±1/2} of OnlineStep come from one symmetric eigendecomposition of
    Ṽ per round, and the ellipsoid projection is solved in that eigenbasis. `ell_projection`:
    "exact" (the projection's multiplier by a safeguarded Newton root of its secular equation,
    clipped to [0, 1000]) or "bounded" (the reference's bounded scalar search, ≤ 500
    iterations). `nan_compat`: a negative radius² makes every index NaN and the first arm is
    played, as in the reference; otherwise radius² is clamped at 0 (both counted). `lam0` = λ₀.
    When σ̇(xᵀθ̄)/σ̇(xᵀθ) > 2 the reference raises; here the event is logged and counted.
    """

    name: ClassVar[str] = "ECOLog"
    plays_tables: ClassVar[bool] = True
    decision_rule = staticmethod(ecolog_arm)
    update_rule = staticmethod(ecolog_update)
    families: ClassVar[tuple[str, ...]] = ("logistic",)
    parameters: ClassVar[Declaration] = (
        number("lam0", 10.0, "regulariser λ₀", gt=0),
        boolean("nan_compat", False, "replicate the authors' NaN radius (arm 0) instead of "
                "clamping radius² at 0"),
        choice("ell_projection", "exact", "ellipsoid projection: exact or the authors' "
               "bounded scalar search", ("exact", "bounded")),
    )

    def __init__(self, problem: ProblemInfo, rng: np.random.Generator, **kwargs: Any) -> None:
        super().__init__(problem, rng, **kwargs)
        p = self.params
        self.lam0 = float(p["lam0"])
        self.nan_compat = bool(p["nan_compat"])
        self.projection = p["ell_projection"]
        d = problem.d
        self.S = float(problem.S)
        self.conf_delta = confidence_delta(self.delta)
        self.V = self.lam0 * np.eye(d)
        self.V_inv = np.eye(d) / self.lam0
        self.theta = np.zeros(d)
        self._cum = np.zeros(1)
        self.counts = np.array([1, 0, 0, 0, -1], dtype=np.int64)
        self.step_size = ecolog_step_size(self.S)

    @property
    def cum(self) -> float:
        """The cumulative-loss term of the radius."""
        return float(self._cum[0])

    @cum.setter
    def cum(self, value: float) -> None:
        self._cum[0] = value

    @property
    def n(self) -> int:
        """1 + the rounds observed (the n of γ_n)."""
        return int(self.counts[N])

    def select(self, t: int, arms: np.ndarray) -> int:
        """First argmax of σ(xᵀθ) + radius·‖x‖_{Ṽ⁻¹}."""
        return ecolog_arm(arms, self.theta, self.V_inv, self.lam0, self.S, self.conf_delta,
                          self.cum, self.nan_compat, self.counts)

    def play_table(self, tables: OutcomeTables) -> None:
        """Every round in one compiled call."""
        counted = self.counts[VIOLATIONS]
        ecolog_rounds(tables, self.V, self.V_inv, self.theta, self._cum, self.lam0, self.S,
                      self.conf_delta, self.nan_compat, self.step_size,
                      self.projection == "exact", self.counts)
        self._warn(counted)

    def update(self, t: int, x: np.ndarray, r: float) -> None:
        """Two online steps, the Ṽ update and the cumulative-loss term."""
        counted = self.counts[VIOLATIONS]
        ecolog_update(self.V, self.V_inv, self.theta, self._cum, x, r, t, self.S,
                      self.step_size, self.projection == "exact", self.counts)
        self._warn(counted)

    def _warn(self, counted: int) -> None:
        """Log the first σ̇(xᵀθ̄)/σ̇(xᵀθ) > 2 event of the run."""
        if counted == 0 and self.counts[VIOLATIONS] > 0:
            log.warning("ECOLog: σ̇(xᵀθ̄)/σ̇(xᵀθ) > 2 at round %d (counted)",
                        self.counts[FIRST_VIOLATION])

    def diagnostics(self) -> dict[str, float]:
        return {
            "clamp_events": float(self.counts[CLAMPS]),
            "sensitivity_violations": float(self.counts[VIOLATIONS]),
            "projections": float(self.counts[PROJECTIONS]),
        }

