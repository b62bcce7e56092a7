"""GLOC (Jun et al. 2017) as the authors' code runs it (docs/glm.md, "GLOC")."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from dpbandits.contract import OutcomeTables, ProblemInfo
from dpbandits.glm import project_ball_metric_into, sherman_morrison
from dpbandits.jit import jit
from dpbandits.linalg import add_outer, dot
from dpbandits.links import LINEAR_KIND, get_link, mean
from dpbandits.params import Declaration, boolean, number
from dpbandits.policies._glm_common import confidence_delta, optimistic_index
from dpbandits.policies.base import Policy
from dpbandits.policies.tables import pull


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
    return radius_sq(B, c_mu, delta, a, tail)


def gloc_radius_constants(c_mu: float, scale: float, delta: float, paper: bool
                          ) -> tuple[float, float]:
    """(a, tail) of `gloc_radius_sq`: 8a multiplies the log term, tail is the last term under
    its square root (reference: a = (L²/c)², tail = 4(L²/c)⁴/δ²)."""
    if paper:
        return scale * scale / (c_mu * c_mu), 4.0 * scale**4 / (c_mu**4 * delta * delta)
    return (scale * scale / c_mu) ** 2, 4.0 * (scale * scale / c_mu) ** 4 / (delta * delta)


@jit
def radius_sq(B: float, c_mu: float, delta: float, a: float, tail: float) -> float:
    """1 + (4/c)B + 8a·ln((2/δ)·sqrt(1 + 2B/c + tail)) (Jun et al. 2017, Thm. 1)."""
    inner = (2.0 / delta) * math.sqrt(1.0 + 2.0 * B / c_mu + tail)
    return 1.0 + (4.0 / c_mu) * B + 8.0 * a * math.log(inner)


@jit
def gloc_arm(arms: np.ndarray, theta: np.ndarray, z: np.ndarray, V_inv: np.ndarray, B: float,
             c_mu: float, delta: float, a: float, tail: float, kind: int, paper: bool) -> int:
    """GLOC (Jun et al. 2017, Alg. 1): first argmax of μ(xᵀθ) + radius·‖x‖_{V⁻¹} on the ONS
    iterate θ (the authors' code), or of xᵀθ̂ + radius·‖x‖_{V⁻¹}, θ̂ = V⁻¹z (the paper)."""
    width = math.sqrt(radius_sq(B, c_mu, delta, a, tail))
    centre, centre_kind = theta, kind
    if paper:
        centre = np.empty(z.shape[0])
        for i in range(z.shape[0]):
            centre[i] = dot(V_inv[i], z)
        centre_kind = LINEAR_KIND
    return optimistic_index(arms, centre, V_inv, width, centre_kind)


@jit
def gloc_update(V: np.ndarray, V_inv: np.ndarray, theta: np.ndarray, z: np.ndarray,
                B: np.ndarray, x: np.ndarray, r: float, kind: int, c_mu: float, S: float,
                paper: bool) -> None:
    """GLOC's update in the authors' order: V⁻¹, V, B += ‖g‖²_{V⁻¹}/(2c_μ), z += (xᵀθ)x and
    the online Newton step u = θ − V⁻¹g/c_μ, g = (μ(xᵀθ) − r)x, normalised onto the sphere
    ‖θ‖ = S (the authors' code) or projected onto {‖θ‖ ≤ S} in the V-norm (the paper)."""
    d = x.shape[0]
    sherman_morrison(V_inv, x, 1.0)
    add_outer(V, x, 1.0)
    xtheta = dot(x, theta)
    residual = mean(kind, xtheta) - r
    g = np.empty(d)
    for i in range(d):
        g[i] = residual * x[i]
    step = np.empty(d)
    for i in range(d):
        step[i] = dot(V_inv[i], g)
    B[0] += (0.5 / c_mu) * dot(g, step)
    u = np.empty(d)
    for i in range(d):
        z[i] += xtheta * x[i]
        u[i] = theta[i] - step[i] / c_mu
    if paper:
        project_ball_metric_into(u, V, S, theta)
        return
    norm = math.sqrt(dot(u, u))
    if norm > 0.0:
        for i in range(d):
            theta[i] = S * u[i] / norm


@jit
def gloc_rounds(tables: OutcomeTables, V: np.ndarray, V_inv: np.ndarray, theta: np.ndarray,
                z: np.ndarray, B: np.ndarray, kind: int, c_mu: float, delta: float, a: float,
                tail: float, S: float, paper: bool) -> None:
    """Every round of GLOC on pre-drawn tables."""
    for t in range(tables.arms.shape[0]):
        i = gloc_arm(tables.arms[t], theta, z, V_inv, B[0], c_mu, delta, a, tail, kind, paper)
        gloc_update(V, V_inv, theta, z, B, tables.arms[t, i], pull(tables, t, i), kind, c_mu,
                    S, paper)


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
    decision_rule = staticmethod(gloc_arm)
    update_rule = staticmethod(gloc_update)
    families: ClassVar[tuple[str, ...]] = ("logistic", "probit", "linear")
    parameters: ClassVar[Declaration] = (
        boolean("paper_faithful", False, "the paper's GLOC (θ̂ centre, V-norm projection) "
                "instead of the authors' code"),
        number("lam0", None, "regulariser λ₀ (null: d)", gt=0, nullable=True),
    )

    def __init__(self, problem: ProblemInfo, rng: np.random.Generator, **kwargs: Any) -> None:
        super().__init__(problem, rng, **kwargs)
        self.paper = bool(self.params["paper_faithful"])
        lam0 = None if self.params["lam0"] is None else float(self.params["lam0"])
        d = problem.d
        self.link = get_link(problem.family)
        self.lam0 = float(d) if lam0 is None else lam0
        self.c_mu = 1.0 / problem.kappa
        self.conf_delta = confidence_delta(self.delta)
        self.scale = problem.R if self.paper else self.link.sup_dot
        self.a, self.tail = gloc_radius_constants(self.c_mu, self.scale, self.conf_delta,
                                                  self.paper)
        self.S = float(problem.S)
        self.V = self.lam0 * np.eye(d)
        self.V_inv = np.eye(d) / self.lam0
        self.theta = np.zeros(d)
        self.z = np.zeros(d)
        self._B = np.array([gloc_b0(self.c_mu, self.S, self.lam0)])

    @property
    def B(self) -> float:
        """The running sum B of Jun et al.'s confidence radius."""
        return float(self._B[0])

    @property
    def theta_hat(self) -> np.ndarray:
        """θ̂ = V⁻¹z (Jun et al. 2017), the centre of the paper's confidence set."""
        return self.V_inv @ self.z

    def radius(self) -> float:
        return math.sqrt(radius_sq(self.B, self.c_mu, self.conf_delta, self.a, self.tail))

    def select(self, t: int, arms: np.ndarray) -> int:
        """First argmax of the optimistic index."""
        return gloc_arm(arms, self.theta, self.z, self.V_inv, self.B, self.c_mu,
                        self.conf_delta, self.a, self.tail, self.link.kind, self.paper)

    def play_table(self, tables: OutcomeTables) -> None:
        """Every round in one compiled call."""
        gloc_rounds(tables, self.V, self.V_inv, self.theta, self.z, self._B, self.link.kind,
                    self.c_mu, self.conf_delta, self.a, self.tail, self.S, self.paper)

    def update(self, t: int, x: np.ndarray, r: float) -> None:
        """V⁻¹, V, B, z and the ONS step, in the reference code's order."""
        gloc_update(self.V, self.V_inv, self.theta, self.z, self._B, x, r, self.link.kind,
                    self.c_mu, self.S, self.paper)
