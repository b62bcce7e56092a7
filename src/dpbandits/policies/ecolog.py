"""ECOLog (Faury et al. 2022) as the authors' code runs it (docs/glm.md, "ECOLog")."""

from __future__ import annotations

import logging
import math
from typing import Any, ClassVar

import numpy as np

from dpbandits import small_linalg
from dpbandits.contract import OutcomeTables, ProblemInfo
from dpbandits.glm import quad_forms, secular_root, sherman_morrison
from dpbandits.links import LOGISTIC, compiled_dot, expit
from dpbandits.params import Declaration, boolean, choice, number
from dpbandits.policies import _glm_rounds
from dpbandits.policies._glm_common import (
    confidence_delta,
)
from dpbandits.policies.base import Policy
from dpbandits.policies.ridge_rounds import play_stretches

log = logging.getLogger(__name__)

PROJ_LAMBDA_MAX = 1000.0
INSIDE_TOL = 1e-3
# Relative slack of the test that no iterate of an online step can reach the ellipsoid's
# boundary; floating-point error in the quantities it bounds is below 1e-14 relative.
_BOUND_SLACK = 1e-8


def ecolog_step_size(diam: float) -> float:
    """η = 0.75 / (1/4 + 1/(1 + diam/2)), the step of OnlineStep."""
    return 1.0 / (0.25 + 1.0 / (1.0 + diam / 2.0)) * 0.75


def ecolog_iterations(diam: float, n: int) -> int:
    """int((1/0.75)·ceil((9/4 + diam/8)·ln(diam/precision))), precision = 1/n."""
    return int((1 / 0.75) * math.ceil((9 / 4 + diam / 8) * math.log(diam / (1.0 / n))))


def ecolog_gamma(lam0: float, n: int, delta: float) -> float:
    """γ_n = sqrt(λ₀)/2 + (2/sqrt(λ₀))·ln(2·sqrt(1 + n/(4λ₀))/δ)."""
    root = math.sqrt(lam0)
    return root / 2 + 2 * math.log(2 * math.sqrt(1 + n / (4 * lam0)) / delta) / root


def ecolog_radius_sq(lam0: float, S: float, gamma: float, cum: float) -> float:
    """radius² = 2λ₀S² + (1+S)²γ_n + cum."""
    return 2 * lam0 * S**2 + (1 + S) ** 2 * gamma + cum


def logistic_nll(z: float, r: float) -> float:
    """Bernoulli negative log-likelihood of reward r at logit z, stably."""
    return float(np.logaddexp(0.0, z)) - r * z


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
        self.nan_compat = p["nan_compat"]
        self.projection = p["ell_projection"]
        d = problem.d
        self.S = problem.S
        self.diam = problem.S
        self.conf_delta = confidence_delta(self.delta)
        self.V = self.lam0 * np.eye(d)
        self.V_inv = np.eye(d) / self.lam0
        self.theta = np.zeros(d)
        self.cum = 0.0
        self.n = 1
        self.step_size = ecolog_step_size(self.diam)
        # (α_j, β_j) of an online step j iterations after a projection (or the start): the
        # iterate is α_j·p + β_j·z₀ + s_j·a, with α, β independent of the data
        self._alphas, self._betas = [1.0], [0.0]
        self._alpha_arr, self._beta_arr = np.ones(1), np.zeros(1)
        self.clamp_events = 0
        self.sensitivity_violations = 0
        self.projections = 0

    def select(self, t: int, arms: np.ndarray) -> int:
        """First argmax of σ(xᵀθ) + radius·‖x‖_{Ṽ⁻¹}."""
        gamma = ecolog_gamma(self.lam0, self.n, self.conf_delta)
        rad2 = ecolog_radius_sq(self.lam0, self.S, gamma, self.cum)
        if rad2 < 0.0:
            self.clamp_events += 1
            if self.nan_compat:
                return 0
            rad2 = 0.0
        ucb = expit(arms @ self.theta) + math.sqrt(rad2) * np.sqrt(quad_forms(arms, self.V_inv))
        return int(ucb.argmax())

    def play_table(self, tables: OutcomeTables) -> None:
        """Stretches of rounds without a projection compiled (`_glm_rounds.ecolog`, the bits of
        `select` and `update`: tests/policies/test_ridge_rounds.py); a round whose online steps
        project, or take fewer than no iterations, through `select` and `update`."""
        play_stretches(self, tables, self._compiled_rounds if compiled_dot(LOGISTIC) else None)

    def _compiled_rounds(self, tables: OutcomeTables, t: int) -> int:
        """Rounds from t on in one compiled call, until one whose steps project; the next round
        to play."""
        counted = self.sensitivity_violations
        (played, self.n, self.cum, self.clamp_events, self.sensitivity_violations, first,
         inside) = _glm_rounds.ecolog(
            tables, t, len(tables.chosen), self.V, self.V_inv, self.theta, expit,
            self.lam0, self.S, self.conf_delta, self.diam, self.step_size, INSIDE_TOL,
            _BOUND_SLACK, self.nan_compat, self.n, self.cum, self.clamp_events, counted)
        if first >= 0 and counted == 0:
            log.warning("ECOLog: σ̇(xᵀθ̄)/σ̇(xᵀθ) > 2 at round %d (counted)", first)
        if inside >= 0:  # the coefficient lists as the steps without projections grew them
            self._coefficients(inside)
        return played

    def update(self, t: int, x: np.ndarray, r: float) -> None:
        """Two online steps, the Ṽ update and the cumulative-loss term."""
        self.n += 1
        eigs, Q = small_linalg.eigh(self.V)
        root = np.sqrt(eigs)
        iters = ecolog_iterations(self.diam, self.n)
        a = (Q.T @ x) / root
        shared = _step_constants(eigs, a)
        theta = self._online_step(Q, eigs, root, a, self.theta, r, iters, bar=False,
                                  shared=shared)
        theta_bar = self._online_step(Q, eigs, root, a, theta, r, iters, bar=True, shared=shared)
        diff = theta - theta_bar
        disc = math.sqrt(max(float(diff @ self.V @ diff), 0.0))
        z, z_bar = float(x @ theta), float(x @ theta_bar)
        p = expit(z)
        s = float(p * (1.0 - p))
        self.V += s * (x[:, None] * x)
        sherman_morrison(self.V_inv, x, s)
        p_bar = expit(z_bar)
        s_bar = float(p_bar * (1.0 - p_bar))
        if s_bar > 2.0 * s:
            if self.sensitivity_violations == 0:
                log.warning("ECOLog: σ̇(xᵀθ̄)/σ̇(xᵀθ) > 2 at round %d (counted)", t)
            self.sensitivity_violations += 1
        self.cum += 2 * (1 + self.S) * (logistic_nll(z_bar, r) - logistic_nll(z, r)) - 0.5 * disc
        self.theta = theta

    def _online_step(
        self,
        Q: np.ndarray,
        eigs: np.ndarray,
        root: np.ndarray,
        a: np.ndarray,
        theta_c: np.ndarray,
        r: float,
        iters: int,
        bar: bool,
        shared: tuple[np.ndarray, np.ndarray, float, float] | None = None,
    ) -> np.ndarray:
        """Projected gradient descent in whitened coordinates, in Ṽ's eigenbasis.

        Iterates z ← ProjEll(z − η(z − z₀ + c(z)·a)). Between projections every iterate lies in
        the span of the last projected point p, z₀ and a, so it is carried as coefficients
        (α, β, s) of z = αp + βz₀ + s·a with the needed inner products precomputed; a vector
        is formed only when a projection is due. When no iterate can reach the boundary (see
        `_inside_throughout`) only the scalar recursion of s runs; α, β follow a fixed sequence.
        `shared` = `_step_constants(eigs, a)`, the same for both steps of a round.
        """
        z0 = root * (Q.T @ theta_c)
        inv_eigs, wa, Da, Gaa = _step_constants(eigs, a) if shared is None else shared
        eta = self.step_size
        keep = 1.0 - eta
        target = self.S * self.S
        limit = target + INSIDE_TOL
        D0 = float(z0 @ a)
        G00, G0a = float(z0 @ (inv_eigs * z0)), float(z0 @ wa)
        if self._inside_throughout(eigs, G00, G0a, Gaa, r, limit):
            alphas, betas = self._coefficients(iters)
            bases = self._alpha_arr[:iters] * D0 + self._beta_arr[:iters] * D0
            s = _scalar_recursion(bases.tolist(), Da, keep, eta, r, bar)
            z = alphas[iters] * z0 + betas[iters] * z0 + s * a
            return Q @ (z / root)
        p = z0
        Dp, Gpp, Gp0, Gpa = D0, G00, G00, G0a
        alpha, beta, s = 1.0, 0.0, 0.0
        for _ in range(iters):
            v = alpha * Dp + beta * D0 + s * Da
            prob = 1.0 / (1.0 + math.exp(-v)) if v > -700.0 else 0.0
            coef = 2.0 * prob - 1.0 if bar else prob - r
            alpha, beta, s = keep * alpha, keep * beta + eta, keep * s - eta * coef
            q = (
                alpha * alpha * Gpp + beta * beta * G00 + s * s * Gaa
                + 2.0 * (alpha * beta * Gp0 + alpha * s * Gpa + beta * s * G0a)
            )
            if q < limit:
                continue
            y = alpha * p + beta * z0 + s * a
            if float((y * y) @ inv_eigs) < limit:
                continue
            self.projections += 1
            weights = eigs * y * y
            if self.projection == "exact":
                nu = secular_root(weights, eigs, target, PROJ_LAMBDA_MAX)
            else:
                nu = _bounded_multiplier(weights, eigs, target)
            p = eigs * y / (eigs + nu)
            wp = inv_eigs * p
            Dp, Gpp, Gp0, Gpa = float(p @ a), float(p @ wp), float(z0 @ wp), float(a @ wp)
            alpha, beta, s = 1.0, 0.0, 0.0
        z = alpha * p + beta * z0 + s * a
        return Q @ (z / root)

    def _coefficients(self, iters: int) -> tuple[list[float], list[float]]:
        """(α_j, β_j) for j = 0 … iters: α ← (1 − η)α, β ← (1 − η)β + η from (1, 0)."""
        alphas, betas = self._alphas, self._betas
        keep, eta = 1.0 - self.step_size, self.step_size
        if len(alphas) <= iters:
            while len(alphas) <= iters:
                alphas.append(keep * alphas[-1])
                betas.append(keep * betas[-1] + eta)
            self._alpha_arr, self._beta_arr = np.array(alphas), np.array(betas)
        return alphas, betas

    def _inside_throughout(
        self, eigs: np.ndarray, G00: float, G0a: float, Gaa: float, r: float, limit: float
    ) -> bool:
        """Whether no iterate z = α_j z₀ + β_j z₀ + s_j a of a step started at z₀ can reach
        ‖z‖²_{Ṽ⁻¹} ≥ limit, so that no projection test can fire.

        α_j + β_j = 1 and, every gradient coefficient lying in [−1, 1] (r ∈ [0, 1]),
        |s_j| ≤ η Σᵢ |1 − η|ⁱ ≤ η/(1 − |1 − η|); hence ‖z‖ ≤ ‖z₀‖ + η/(1 − |1 − η|)·‖a‖ in the
        Ṽ⁻¹-norm, compared with a relative slack far above the rounding error of the computed
        test value.
        """
        eta = self.step_size
        if not (0.0 < eta < 2.0 and eigs[0] > 0.0 and 0.0 <= r <= 1.0 and G00 >= 0.0
                and Gaa >= 0.0):
            return False
        if not abs(G0a) <= math.sqrt(G00 * Gaa) * (1.0 + _BOUND_SLACK):
            return False
        s_max = eta / (1.0 - abs(1.0 - eta))
        bound = (math.sqrt(G00) + s_max * math.sqrt(Gaa)) * (1.0 + _BOUND_SLACK)
        return bound * bound < limit

    def diagnostics(self) -> dict[str, float]:
        return {
            "clamp_events": float(self.clamp_events),
            "sensitivity_violations": float(self.sensitivity_violations),
            "projections": float(self.projections),
        }


def _step_constants(eigs: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(1/e, a/e, aᵀa, aᵀ(a/e)) for the eigenvalues e of Ṽ: what both online steps share."""
    inv_eigs = 1.0 / eigs
    wa = inv_eigs * a
    return inv_eigs, wa, float(a @ a), float(a @ wa)


def _scalar_recursion(
    bases: list[float], Da: float, keep: float, eta: float, r: float, bar: bool
) -> float:
    """s after the iterations of an online step that projects nowhere: with vⱼ = bases[j] + s·Da,
    s ← (1 − η)s − η·c(vⱼ), c = 2σ(v) − 1 (θ̄ step) or σ(v) − r, the same operations as the
    general loop of `ECOLog._online_step`."""
    s = 0.0
    exp = math.exp
    if bar:
        for base in bases:
            v = base + s * Da
            prob = 1.0 / (1.0 + exp(-v)) if v > -700.0 else 0.0
            s = keep * s - eta * (2.0 * prob - 1.0)
    else:
        for base in bases:
            v = base + s * Da
            prob = 1.0 / (1.0 + exp(-v)) if v > -700.0 else 0.0
            s = keep * s - eta * (prob - r)
    return s


def _bounded_multiplier(weights: np.ndarray, eigs: np.ndarray, target: float) -> float:
    """The reference's multiplier: bounded scalar minimisation of λS² + Σ wᵢ/(eᵢ + λ)."""

    def h(lam: float) -> float:
        return lam * target + float(np.sum(weights / (eigs + lam)))

    from scipy.optimize import minimize_scalar  # heavy import, only for projections

    res = minimize_scalar(h, bounds=(0.0, PROJ_LAMBDA_MAX), method="bounded",
                          options={"maxiter": 500})
    return float(res.x)
