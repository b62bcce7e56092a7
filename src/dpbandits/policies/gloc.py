"""GLOC (Jun et al. 2017) as the authors' code runs it (docs/glm.md, "GLOC")."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from dpbandits.contract import OutcomeTables, ProblemInfo
from dpbandits.glm import project_ball_metric, quad_forms, sherman_morrison
from dpbandits.links import LINK_KINDS, compiled_mean, compiled_mean_ufunc, get_link
from dpbandits.params import Declaration, boolean, number
from dpbandits.policies import _glm_rounds
from dpbandits.policies._glm_common import confidence_delta
from dpbandits.policies.base import Policy
from dpbandits.policies.ridge_rounds import play_stretches


def gloc_b0(c_mu: float, S: float, lam0: float) -> float:
    """B₀ = 2·c_μ·S²·λ₀ (= 2S²d/κ with c_μ = 1/κ, λ₀ = d; docs/glm.md, "GLOC")."""
    return 2.0 * c_mu * S * S * lam0


def gloc_radius_sq(B: float, c_mu: float, scale: float, delta: float, paper: bool) -> float:
    """Squared confidence radius (Jun et al. 2017, Thm. 1; docs/glm.md, "GLOC").

    Reference form (`paper=False`, scale = L_μ): 1 + (4/c)B + 8(L²/c)²·ln((2/δ)·sqrt(1 + 2B/c
    + 4(L²/c)⁴/δ²)). Paper form (`paper=True`, scale = R, the noise scale σ of the theorem):
    1 + (4/c)B + 8(R²/c²)·ln((2/δ)·sqrt(1 + 2B/c + 4R⁴/(c⁴δ²))); the two agree for R = 1.
    """
    a, tail = gloc_radius_constants(c_mu, scale, delta, paper)
    inner = (2.0 / delta) * math.sqrt(1.0 + 2.0 * B / c_mu + tail)
    return 1.0 + (4.0 / c_mu) * B + 8.0 * a * math.log(inner)


def gloc_radius_constants(c_mu: float, scale: float, delta: float, paper: bool
                          ) -> tuple[float, float]:
    """(a, tail) of `gloc_radius_sq`: 8a multiplies the log term, tail is the last term under
    its square root (reference: a = (L²/c)², tail = 4(L²/c)⁴/δ²)."""
    if paper:
        return scale * scale / (c_mu * c_mu), 4.0 * scale**4 / (c_mu**4 * delta * delta)
    return (scale * scale / c_mu) ** 2, 4.0 * (scale * scale / c_mu) ** 4 / (delta * delta)


class GLOC(Policy):
    """GLOC: online-Newton-step iterate θ with a data-dependent radius.

    Default = the reference code: UCB μ(xᵀθ) + radius·‖x‖_{V⁻¹} on the ONS iterate θ, which is
    normalised onto the sphere ‖θ‖ = S after every update. `paper_faithful` = Jun et al.: UCB
    xᵀθ̂ + radius·‖x‖_{V⁻¹} with θ̂ = V⁻¹z, ONS projection onto {‖θ‖ ≤ S} in the V-norm, and R
    instead of L_μ in the radius. `lam0` = λ₀ (None: d). c_μ = 1/κ with the instance κ; δ is the
    `delta` argument (0.02 if None).
    """

    name: ClassVar[str] = "GLOC"
    plays_tables: ClassVar[bool] = True
    families: ClassVar[tuple[str, ...]] = ("logistic", "probit", "linear")
    parameters: ClassVar[Declaration] = (
        boolean("paper_faithful", False, "the paper's GLOC (θ̂ centre, V-norm projection) "
                "instead of the authors' code"),
        number("lam0", None, "regulariser λ₀ (null: d)", gt=0, nullable=True),
    )

    def __init__(self, problem: ProblemInfo, rng: np.random.Generator, **kwargs: Any) -> None:
        super().__init__(problem, rng, **kwargs)
        self.paper = self.params["paper_faithful"]
        lam0 = None if self.params["lam0"] is None else float(self.params["lam0"])
        d = problem.d
        self.link = get_link(problem.family)
        self.lam0 = float(d) if lam0 is None else lam0
        self.c_mu = 1.0 / problem.kappa
        self.conf_delta = confidence_delta(self.delta)
        self.scale = problem.R if self.paper else self.link.sup_dot
        self.S = problem.S
        self.V = self.lam0 * np.eye(d)
        self.V_inv = np.eye(d) / self.lam0
        self.theta = np.zeros(d)
        self.z = np.zeros(d)
        self._theta_hat: np.ndarray | None = np.zeros(d)
        self.B = gloc_b0(self.c_mu, self.S, self.lam0)

    @property
    def theta_hat(self) -> np.ndarray:
        """θ̂ = V⁻¹z (Jun et al. 2017), the centre of the paper's confidence set, on demand."""
        if self._theta_hat is None:
            self._theta_hat = self.V_inv @ self.z
        return self._theta_hat

    @theta_hat.setter
    def theta_hat(self, value: np.ndarray) -> None:
        self._theta_hat = value

    def radius(self) -> float:
        return math.sqrt(gloc_radius_sq(self.B, self.c_mu, self.scale, self.conf_delta, self.paper))

    def select(self, t: int, arms: np.ndarray) -> int:
        """First argmax of the optimistic index."""
        bonus = self.radius() * np.sqrt(quad_forms(arms, self.V_inv))
        if self.paper:
            return int((arms @ self.theta_hat + bonus).argmax())
        return int((self.link.mean(arms @ self.theta) + bonus).argmax())

    def play_table(self, tables: OutcomeTables) -> None:
        """The reference code's rounds in one compiled call (`_glm_rounds.gloc`, the bits of
        `select` and `update`: tests/policies/test_ridge_rounds.py); the paper's, with its
        projection in the V-norm, and a mean the compiled rounds do not compute, round by
        round."""
        horizon = len(tables.chosen)
        if self.paper or not compiled_mean(self.link):
            play_stretches(self, tables, None)
            return
        if horizon == 0:
            return
        a, tail = gloc_radius_constants(self.c_mu, self.scale, self.conf_delta, False)
        _, self.B = _glm_rounds.gloc(
            tables, 0, horizon, self.V, self.V_inv, self.theta, self.z,
            LINK_KINDS[self.link.name], compiled_mean_ufunc(self.link), self.c_mu,
            self.conf_delta, a, tail, self.S, self.B)
        self._theta_hat = None

    def update(self, t: int, x: np.ndarray, r: float) -> None:
        """V⁻¹, V, B, z and the ONS step, in the reference code's order (θ̂ = V⁻¹z on demand)."""
        sherman_morrison(self.V_inv, x)
        self.V += x[:, None] * x
        xtheta = float(x @ self.theta)
        g = (float(self.link.mean(np.array(xtheta))) - r) * x
        self.B += (0.5 / self.c_mu) * float(g @ self.V_inv @ g)
        self.z += xtheta * x
        self._theta_hat = None
        u = self.theta - (self.V_inv @ g) / self.c_mu
        if self.paper:
            self.theta = project_ball_metric(u, self.V, self.S)
            return
        norm = math.sqrt(float(u @ u))
        if norm > 0.0:
            self.theta = self.S * u / norm
