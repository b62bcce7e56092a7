"""RS-GLinUCB (Sawarni et al. 2024), the non-private twin of Alg. 2 (docs/glm.md, "RS-GLinUCB")."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from dpbandits.contract import OutcomeTables, ProblemInfo
from dpbandits.errors import ConfigError
from dpbandits.glm import (
    SOLVERS,
    GrowingNewton,
    SolverStats,
    compat_mle,
    logdet,
    quad_forms,
    sherman_morrison,
)
from dpbandits.links import LINK_KINDS, compiled_dot, expit, get_link
from dpbandits.params import Declaration, boolean, choice, number
from dpbandits.policies import _glm_rounds
from dpbandits.policies._glm_common import NEWTON_CAP, confidence_delta
from dpbandits.policies.base import Policy
from dpbandits.policies.ridge_rounds import play_stretches

VARIANTS = ("T2", "C", "SW", "paper")

# Settings each variant implies (docs/glm.md, "RS-GLinUCB"); every entry can be overridden by name.
VARIANT_FLAGS: dict[str, dict[str, Any]] = {
    "T2": {"c_dbl": 1.0, "alias_bug": False, "exact_V_update": False, "h_prev_init_zero": False,
           "det_switch": False, "strict_switch": False, "h_divide_e": True,
           "warmup_rule": "code", "ucb_centre": "mean", "tau_includes_warmup": True},
    "C": {"c_dbl": 0.5, "alias_bug": True, "exact_V_update": False, "h_prev_init_zero": False,
          "det_switch": False, "strict_switch": False, "h_divide_e": True,
          "warmup_rule": "code", "ucb_centre": "mean", "tau_includes_warmup": True},
    "SW": {"c_dbl": 0.5, "alias_bug": True, "exact_V_update": True, "h_prev_init_zero": True,
           "det_switch": True, "strict_switch": False, "h_divide_e": False,
           "warmup_rule": "code", "ucb_centre": "mean", "tau_includes_warmup": True},
    "paper": {"c_dbl": 1.0, "alias_bug": False, "exact_V_update": True,
              "h_prev_init_zero": False, "det_switch": True, "strict_switch": True,
              "h_divide_e": True, "warmup_rule": "paper", "ucb_centre": "tau",
              "tau_includes_warmup": False},
}


def _float_or_none(value: float | None) -> float | None:
    return None if value is None else float(value)


def rs_lambda_t2(d: int, horizon: int, delta: float, R: float) -> float:
    """λ = 0.75·d·ln(4T/δ)/R² (variant T2: the λ printed in the authors' saved notebook outputs)."""
    return 0.75 * d * math.log(4.0 * horizon / delta) / R**2


def rs_gamma(R: float, S: float, d: int, horizon: int, delta: float) -> float:
    """γ = R·S·sqrt(d ln(T/δ)) (the authors' code)."""
    return R * S * math.sqrt(d * math.log(horizon / delta))


def rs_beta(d: int, horizon: int, delta: float) -> float:
    """β = 4·sqrt(d ln(T/δ)) (the authors' code)."""
    return 4.0 * math.sqrt(d * math.log(horizon / delta))


def rs_warmup_threshold(kappa: float, R: float, S: float, d: int) -> float:
    """Criterion-I threshold of the authors' code, 1/(0.01·κ·R⁴·S²·d)."""
    return 1.0 / (0.01 * kappa * R**4 * S**2 * d)


class RSGLinUCB(Policy):
    """RS-GLinUCB with warm-up (Criterion I), elimination and determinant-doubling switches.

    `variant` ∈ {T2 (default), C, SW, paper} fixes λ, the doubling constant, λ_fit and the quirk
    flags (docs/glm.md, "RS-GLinUCB"); each is a hyper-parameter of its own (None = the variant's
    value): `lam`, `c_dbl`, `lambda_fit`, `alias_bug` (after a switch H_prev *is* H_cur),
    `exact_V_update` (V += xxᵀ instead of xxᵀ/(1+m)), `h_prev_init_zero`, `det_switch` (det
    instead of logdet), `strict_switch` (> instead of ≥), `h_divide_e` (H increment μ̇/e),
    `warmup_rule` ("code": 1/(0.01κR⁴S²d), "paper": 1/(γ²κR²)), `warmup_threshold` (a number
    overrides the rule), `ucb_centre` ("mean": (θ_w+θ_τ)/2, "tau": θ_τ), `tau_includes_warmup`,
    `gamma`, `beta`. `running_max_logdet` compares running maxima of the log-determinants, as
    the authors' last committed code does (it lets aliased runs keep switching). `solver`:
    "compat" (L-BFGS-B, the authors') or "newton"; a fit is accepted only if it succeeds.
    κ is the instance value; δ is the `delta` argument (0.02 if None).
    """

    name: ClassVar[str] = "RS-GLinUCB"
    plays_tables: ClassVar[bool] = True
    families: ClassVar[tuple[str, ...]] = ("logistic", "probit", "linear")
    parameters: ClassVar[Declaration] = (
        choice("variant", "T2", "settings of one code state (docs/glm.md, RS-GLinUCB)",
               VARIANTS),
        number("lam", None, "λ of V, H (null: the variant's)", gt=0, nullable=True),
        number("c_dbl", None, "doubling constant c of Criterion II (null: the variant's)",
               gt=0, nullable=True),
        number("lambda_fit", None, "regulariser of the fits (null: the variant's)", ge=0,
               nullable=True),
        boolean("alias_bug", None, "after a switch H_prev is H_cur (null: the variant's)",
                nullable=True),
        boolean("exact_V_update", None, "V += xxᵀ instead of xxᵀ/(1 + m)", nullable=True),
        boolean("h_prev_init_zero", None, "H_prev starts at 0", nullable=True),
        boolean("det_switch", None, "compare determinants instead of log-determinants",
                nullable=True),
        boolean("strict_switch", None, "switch on > instead of ≥", nullable=True),
        boolean("h_divide_e", None, "H increment μ̇/e · xxᵀ", nullable=True),
        choice("warmup_rule", None, "Criterion-I threshold: code 1/(0.01κR⁴S²d) or paper "
               "1/(γ²κR²)", ("code", "paper"), nullable=True),
        number("warmup_threshold", None, "Criterion-I threshold (null: the rule's)", gt=0,
               nullable=True),
        choice("ucb_centre", None, "UCB centre: mean (θ_w + θ_τ)/2 or tau θ_τ",
               ("mean", "tau"), nullable=True),
        boolean("tau_includes_warmup", None, "θ_τ is also fitted on warm-up rounds",
                nullable=True),
        number("gamma", None, "elimination width γ (null: R·S·√(d ln(T/δ)))", gt=0,
               nullable=True),
        number("beta", None, "UCB width β (null: 4√(d ln(T/δ)))", gt=0, nullable=True),
        boolean("running_max_logdet", False, "compare running maxima of the log-determinants "
                "(the authors' last code)"),
        choice("solver", "compat", "MLE solver: the authors' L-BFGS-B (compat) or Newton",
               SOLVERS),
        NEWTON_CAP,
    )

    def __init__(self, problem: ProblemInfo, rng: np.random.Generator, **kwargs: Any) -> None:
        super().__init__(problem, rng, **kwargs)
        self._configure()
        d = problem.d
        self.link = get_link(problem.family)
        if self.solver == "compat" and not self.link.binary:
            raise ConfigError(
                f"{self.name}: solver = 'compat' is not allowed for family {problem.family!r}; "
                "allowed: newton"
            )
        lam = self.lam
        self.V = lam * np.eye(d)
        self.V_inv = np.eye(d) / lam
        self.H_cur = lam * np.eye(d)
        self.H_cur_inv = np.eye(d) / lam
        if self.h_prev_init_zero:
            self.H_prev = np.zeros((d, d))
            self.H_prev_inv = np.full((d, d), np.nan)
        else:
            self.H_prev = lam * np.eye(d)
            self.H_prev_inv = np.eye(d) / lam
        self.aliased = False
        self.max_logdet_cur = logdet(self.H_cur)
        self.max_logdet_prev = logdet(self.H_prev)
        # ln det of H_cur and of H_prev as last computed; None once the matrix has changed
        self._logdet_cur: float | None = None
        self._logdet_prev: float | None = None
        self._log_dbl = math.log(1.0 + self.c_dbl)
        self.theta_w = np.zeros(d)
        self.theta_tau = np.zeros(d)
        self.stats = SolverStats()
        horizon = problem.horizon
        self.Z_w = GrowingNewton(d, 16, self.link, self.lambda_fit, cap=self.cap, stats=self.stats)
        self.Z_tau = GrowingNewton(
            d, horizon, self.link, self.lambda_fit, cap=self.cap, stats=self.stats
        )
        self.warmup_flag = False
        self.warmup_rounds: list[int] = []
        self.switch_times: list[int] = []
        self.fits_w = 0
        self.fits_tau = 0

    def _configure(self) -> None:
        """Resolve the variant's settings and the explicit overrides."""
        p, prob = self.params, self.problem
        self.variant = p["variant"]
        flags = dict(VARIANT_FLAGS[self.variant])
        for key in ("alias_bug", "exact_V_update", "h_prev_init_zero", "det_switch",
                    "strict_switch", "h_divide_e", "tau_includes_warmup", "warmup_rule",
                    "ucb_centre"):
            if p[key] is not None:
                flags[key] = p[key]
        if p["c_dbl"] is not None:
            flags["c_dbl"] = float(p["c_dbl"])
        for key, value in flags.items():
            setattr(self, key, value)
        self.running_max_logdet = p["running_max_logdet"]
        self.solver = p["solver"]
        self.cap = float(p["newton_cap"]) * prob.S
        self.conf_delta = delta = confidence_delta(self.delta)
        d, T, R, S, kappa = prob.d, prob.horizon, prob.R, prob.S, prob.kappa
        lam = _float_or_none(p["lam"])
        if lam is None:
            lam = rs_lambda_t2(d, T, delta, R) if self.variant in ("T2", "paper") else 0.5
        self.lam = lam
        lambda_fit = _float_or_none(p["lambda_fit"])
        if lambda_fit is None:
            lambda_fit = lam / 2 if self.variant == "SW" else 1e-5
        self.lambda_fit = lambda_fit
        gamma = _float_or_none(p["gamma"])
        self.gamma = rs_gamma(R, S, d, T, delta) if gamma is None else gamma
        beta = _float_or_none(p["beta"])
        self.beta = rs_beta(d, T, delta) if beta is None else beta
        thr = _float_or_none(p["warmup_threshold"])
        if thr is None:
            if self.warmup_rule == "code":
                thr = rs_warmup_threshold(kappa, R, S, d)
            else:
                thr = 1.0 / (self.gamma**2 * kappa * R**2)
        self.thr_w = thr
        self.width = self.gamma * math.sqrt(kappa)

    # -- helpers -----------------------------------------------------------------------------

    def _prev_inv(self) -> np.ndarray:
        return self.H_cur_inv if self.aliased else self.H_prev_inv

    def _logdet_h_cur(self) -> float:
        """ln det H_cur, computed once per change of H_cur."""
        if self._logdet_cur is None:
            self._logdet_cur = logdet(self.H_cur)
        return self._logdet_cur

    def _logdet_h_prev(self) -> float:
        """ln det H_prev (H_cur when aliased), computed once per change of the matrix."""
        if self.aliased:
            return self._logdet_h_cur()
        if self._logdet_prev is None:
            self._logdet_prev = logdet(self.H_prev)
        return self._logdet_prev

    def _switch_due(self) -> bool:
        """Criterion II: det(H_cur) ≥ (1 + c)·det(H_prev), in the variant's form."""
        H_prev = self.H_cur if self.aliased else self.H_prev
        if self.det_switch:
            lhs, rhs = np.linalg.det(self.H_cur), (1.0 + self.c_dbl) * np.linalg.det(H_prev)
        elif self.running_max_logdet:
            lhs, rhs = self.max_logdet_cur, self._log_dbl + self.max_logdet_prev
        else:
            lhs, rhs = self._logdet_h_cur(), self._log_dbl + self._logdet_h_prev()
        return bool(lhs > rhs) if self.strict_switch else bool(lhs >= rhs)

    def _fit(self, data: GrowingNewton, theta0: np.ndarray) -> tuple[np.ndarray, bool]:
        if self.solver == "newton":
            return data.solve(theta0)
        n = data.n
        return compat_mle(data.X[:n], data.r[:n], self.link, self.lambda_fit, theta0,
                          stats=self.stats)

    # -- policy ------------------------------------------------------------------------------

    def select(self, t: int, arms: np.ndarray) -> int:
        """Warm-up, switch check with θ_τ refit, elimination, optimistic choice."""
        m = quad_forms(arms, self.V_inv)
        if (m > self.thr_w).any():
            a = int(m.argmax())
            x = arms[a]
            w = 1.0 if self.exact_V_update else 1.0 / (1.0 + float(m[a]))
            self.V += w * (x[:, None] * x)
            sherman_morrison(self.V_inv, x, w)
            self.warmup_flag = True
            self.warmup_rounds.append(t)
            return a
        self.warmup_flag = False
        if self._switch_due():
            self._switch(t)
        c = arms @ self.theta_w
        w = self.width * np.sqrt(m)
        keep = c + w >= (c - w).max()
        if self.ucb_centre == "mean":
            centre = (self.theta_w + self.theta_tau) / 2
        else:
            centre = self.theta_tau
        index = arms @ centre + self.beta * np.sqrt(quad_forms(arms, self._prev_inv()))
        index[~keep] = -np.inf
        return int(index.argmax())

    def play_table(self, tables: OutcomeTables) -> None:
        """Stretches of rounds without a warm-up or a switch compiled (`_glm_rounds.
        rs_glinucb`, the bits of `select` and `update`: tests/policies/test_ridge_rounds.py);
        the round where one stops, and every round of the determinant form of Criterion II,
        through `select` and `update`."""
        compiled = not self.det_switch and compiled_dot(self.link)
        play_stretches(self, tables, self._compiled_rounds if compiled else None)

    def _compiled_rounds(self, tables: OutcomeTables, t: int) -> int:
        """Rounds from t on in one compiled call, until one that warms up or switches; the next
        round to play."""
        centre = (self.theta_w + self.theta_tau) / 2 if self.ucb_centre == "mean" else (
            self.theta_tau)
        z = self.Z_tau
        played, z.n, self.max_logdet_cur, logdet_cur, logdet_prev = _glm_rounds.rs_glinucb(
            tables, t, len(tables.chosen), self.V_inv, self.H_cur, self.H_cur_inv,
            self.H_prev, self._prev_inv(), self.theta_w, centre, z.X, z.r, z.n, self.aliased,
            self.running_max_logdet, self.strict_switch, self.h_divide_e,
            LINK_KINDS[self.link.name], expit, self.thr_w, self.width, self.beta,
            self._log_dbl, self._logdet_prev, self.max_logdet_cur, self.max_logdet_prev)
        if logdet_prev is not None:  # computed where first needed, as `_logdet_h_prev` does
            self._logdet_prev = logdet_prev
        if played > t:  # the rounds did not warm up; H_cur changed
            self.warmup_flag = False
        if played > t or logdet_cur is not None:
            self._logdet_cur = logdet_cur
        return played

    def _switch(self, t: int) -> None:
        """H_prev ← copy of H_cur (or alias), refit θ_τ on the stored data."""
        self.switch_times.append(t)
        if self.alias_bug:
            self.aliased = True
        else:
            self.H_prev = self.H_cur.copy()
            self.H_prev_inv = self.H_cur_inv.copy()
            self._logdet_prev = None
        self.max_logdet_prev = max(self.max_logdet_prev, self._logdet_h_cur())
        if self.Z_tau.n > 0:
            theta, success = self._fit(self.Z_tau, self.theta_tau)
            self.fits_tau += 1
            if success:
                self.theta_tau = theta

    def update(self, t: int, x: np.ndarray, r: float) -> None:
        """Store (x, r); refit θ_w after a warm-up round, else grow H_cur."""
        if self.warmup_flag:
            self.Z_w.add(x, r)
            if self.tau_includes_warmup:
                self.Z_tau.add(x, r)
            theta, success = self._fit(self.Z_w, (self.theta_w + self.theta_tau) / 2)
            self.fits_w += 1
            if success:
                self.theta_w = theta
            return
        self.Z_tau.add(x, r)
        s = float(self.link.dot(np.array(float(x @ self.theta_w))))
        weight = s / math.e if self.h_divide_e else s
        self.H_cur += weight * (x[:, None] * x)
        sherman_morrison(self.H_cur_inv, x, weight)
        self._logdet_cur = None
        if self.running_max_logdet:
            self.max_logdet_cur = max(self.max_logdet_cur, self._logdet_h_cur())

    def events(self) -> dict[str, np.ndarray]:
        return {
            "switch_times": np.asarray(self.switch_times, dtype=np.int64),
            "warmup_rounds": np.asarray(self.warmup_rounds, dtype=np.int64),
        }

    def diagnostics(self) -> dict[str, float]:
        return {
            "warmup_rounds": float(len(self.warmup_rounds)),
            "switches": float(len(self.switch_times)),
            "fits": float(self.stats.fits),
            "fits_warmup": float(self.fits_w),
            "fits_tau": float(self.fits_tau),
            "solver_failures": float(self.stats.failures),
            "lambda": float(self.lam),
            "warmup_threshold": float(self.thr_w),
        }
