"""RS-GLinUCB (Sawarni et al. 2024), the non-private twin of Alg. 2 (docs/glm.md, "RS-GLinUCB")."""

from __future__ import annotations

import math
from typing import Any, ClassVar, NamedTuple

import numpy as np

from dpbandits.contract import OutcomeTables, ProblemInfo
from dpbandits.errors import ConfigError
from dpbandits.glm import (
    SOLVERS,
    FitArrays,
    GrowingNewton,
    SolverStats,
    add_row,
    compat_mle,
    log_det_spd,
    quad_form,
    sherman_morrison,
)
from dpbandits.jit import jit
from dpbandits.linalg import add_outer, dot, first_argmax
from dpbandits.links import get_link, mean_dot
from dpbandits.params import Declaration, boolean, choice, number
from dpbandits.policies._glm_common import (
    NEWTON_CAP,
    confidence_delta,
)
from dpbandits.policies.base import Policy
from dpbandits.policies.tables import play_rounds, pull

VARIANTS = ("T2", "C", "SW", "paper", "ab8fd16")

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
    "ab8fd16": {"c_dbl": 0.5, "alias_bug": True, "exact_V_update": False,
                "h_prev_init_zero": False, "det_switch": True, "strict_switch": False,
                "h_divide_e": True, "warmup_rule": "code", "ucb_centre": "mean",
                "tau_includes_warmup": True},
}

# The fits' regulariser when `lambda_fit` is null (SW: λ/2).
VARIANT_LAMBDA_FIT = {"T2": 1e-5, "C": 1e-5, "paper": 1e-5, "ab8fd16": 1e-3}


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


MAX_CUR, MAX_PREV, LOGDET_PREV = 0, 1, 2  # entries of `RSState.logs`


class RSState(NamedTuple):
    """What RS-GLinUCB's rounds read and write: V and V⁻¹ (warm-up design), H_cur, H_prev and
    their inverses, θ_w and θ_τ, `aliased` (int64 [1]: after a switch H_prev *is* H_cur) and
    `logs` (running maxima of ln det H_cur and ln det H_prev, and ln det H_prev)."""

    V: np.ndarray
    V_inv: np.ndarray
    H_cur: np.ndarray
    H_cur_inv: np.ndarray
    H_prev: np.ndarray
    H_prev_inv: np.ndarray
    theta_w: np.ndarray
    theta_tau: np.ndarray
    aliased: np.ndarray
    logs: np.ndarray


class RSConfig(NamedTuple):
    """RS-GLinUCB's constants and the variant's switches (docs/glm.md, "RS-GLinUCB")."""

    kind: int
    thr_w: float
    width: float
    beta: float
    c_dbl: float
    log_dbl: float
    exact_V_update: bool
    mean_centre: bool
    det_switch: bool
    running_max: bool
    strict: bool
    h_divide_e: bool


@jit
def warmup_index(arms: np.ndarray, V_inv: np.ndarray, thr_w: float) -> int:
    """Criterion I: the first arm of largest ‖x‖²_{V⁻¹} when one exceeds thr_w, else −1."""
    m = np.empty(arms.shape[0])
    due = False
    for k in range(arms.shape[0]):
        m[k] = quad_form(arms[k], V_inv)
        due = due or m[k] > thr_w
    return first_argmax(m) if due else -1


@jit
def rs_glinucb_arm(arms: np.ndarray, state: RSState, cfg: RSConfig) -> int:
    """RS-GLinUCB (Sawarni et al. 2024, Alg. 2, the authors' code): a warm-up round
    (Criterion I) plays its arm x and adds w·xxᵀ to V (w = 1/(1 + ‖x‖²_{V⁻¹}), or 1); else
    the arms with xᵀθ_w + γ√κ‖x‖_{V⁻¹} ≥ max(xᵀθ_w − γ√κ‖x‖_{V⁻¹}) are kept and the first
    argmax of xᵀθ_c + β‖x‖_{H_prev⁻¹} among them played, θ_c = (θ_w + θ_τ)/2 or θ_τ."""
    a = warmup_index(arms, state.V_inv, cfg.thr_w)
    if a >= 0:
        x = arms[a]
        m = quad_form(x, state.V_inv)
        w = 1.0 if cfg.exact_V_update else 1.0 / (1.0 + m)
        add_outer(state.V, x, w)
        sherman_morrison(state.V_inv, x, w)
        return a
    K, d = arms.shape
    centre = np.empty(d)
    for j in range(d):
        centre[j] = (0.5 * (state.theta_w[j] + state.theta_tau[j]) if cfg.mean_centre
                     else state.theta_tau[j])
    prev_inv = state.H_cur_inv if state.aliased[0] else state.H_prev_inv
    c = np.empty(K)
    w = np.empty(K)
    low = -np.inf
    for k in range(K):
        c[k] = dot(arms[k], state.theta_w)
        w[k] = cfg.width * math.sqrt(quad_form(arms[k], state.V_inv))
        lo = c[k] - w[k]
        if lo != lo or low != low:
            low = math.nan
        elif lo > low:
            low = lo
    index = np.empty(K)
    for k in range(K):
        if c[k] + w[k] >= low:
            index[k] = dot(arms[k], centre) + cfg.beta * math.sqrt(quad_form(arms[k], prev_inv))
        else:
            index[k] = -np.inf
    return first_argmax(index)


@jit
def rs_switch_due(state: RSState, cfg: RSConfig) -> bool:
    """Criterion II: det H_cur ≥ (1 + c)·det H_prev, as determinants, running maxima of the
    log-determinants or log-determinants (> instead of ≥ when `strict`)."""
    aliased = state.aliased[0] != 0
    if cfg.det_switch:
        lhs = math.exp(log_det_spd(state.H_cur))
        rhs = (1.0 + cfg.c_dbl) * math.exp(log_det_spd(state.H_cur if aliased else state.H_prev))
    elif cfg.running_max:
        lhs, rhs = state.logs[MAX_CUR], cfg.log_dbl + state.logs[MAX_PREV]
    else:
        lhs = log_det_spd(state.H_cur)
        rhs = cfg.log_dbl + (lhs if aliased else state.logs[LOGDET_PREV])
    return lhs > rhs if cfg.strict else lhs >= rhs


@jit
def rs_glinucb_update(fit: FitArrays, state: RSState, cfg: RSConfig, x: np.ndarray,
                      r: float) -> None:
    """A round that did not warm up: (x, r) into the data of θ_τ, H_cur += w·xxᵀ with
    w = μ̇(xᵀθ_w) (/e), and H_cur⁻¹ by Sherman–Morrison; with running maxima, that of
    ln det H_cur."""
    add_row(fit, x, r)
    s = mean_dot(cfg.kind, dot(x, state.theta_w))
    weight = s / math.e if cfg.h_divide_e else s
    add_outer(state.H_cur, x, weight)
    sherman_morrison(state.H_cur_inv, x, weight)
    if cfg.running_max:
        state.logs[MAX_CUR] = max(state.logs[MAX_CUR], log_det_spd(state.H_cur))


@jit
def rs_glinucb_rounds(tables: OutcomeTables, t: int, fit: FitArrays, state: RSState,
                      cfg: RSConfig) -> int:
    """Rounds t, t + 1, … on pre-drawn tables up to one that warms up or switches (whose fits
    the policy makes) or finds θ_τ's data full; that round."""
    for s in range(t, tables.arms.shape[0]):
        arms = tables.arms[s]
        if (warmup_index(arms, state.V_inv, cfg.thr_w) >= 0 or rs_switch_due(state, cfg)
                or fit.state[0] == fit.X.shape[0]):
            return s
        i = rs_glinucb_arm(arms, state, cfg)
        rs_glinucb_update(fit, state, cfg, arms[i], pull(tables, s, i))
    return tables.arms.shape[0]


class RSGLinUCB(Policy):
    """RS-GLinUCB with warm-up (Criterion I), elimination and determinant-doubling switches.

    `variant` ∈ {T2 (default), C, SW, paper, ab8fd16} fixes λ, the doubling constant, λ_fit and
    the quirk flags (docs/glm.md, "RS-GLinUCB"); each is a hyper-parameter of its own (None = the
    variant's value): `lam`, `c_dbl`, `lambda_fit`, `alias_bug` (after a switch H_prev *is* H_cur),
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
    decision_rule = staticmethod(rs_glinucb_arm)
    update_rule = staticmethod(rs_glinucb_update)
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
        if self.h_prev_init_zero:
            H_prev, H_prev_inv = np.zeros((d, d)), np.full((d, d), np.nan)
        else:
            H_prev, H_prev_inv = lam * np.eye(d), np.eye(d) / lam
        H_cur = lam * np.eye(d)
        logs = np.array([log_det_spd(H_cur), log_det_spd(H_prev), log_det_spd(H_prev)])
        self.state = RSState(lam * np.eye(d), np.eye(d) / lam, H_cur, np.eye(d) / lam, H_prev,
                             H_prev_inv, np.zeros(d), np.zeros(d), np.zeros(1, dtype=np.int64),
                             logs)
        self.cfg = RSConfig(self.link.kind, float(self.thr_w), float(self.width),
                            float(self.beta), float(self.c_dbl), math.log(1.0 + self.c_dbl),
                            bool(self.exact_V_update), self.ucb_centre == "mean",
                            bool(self.det_switch), bool(self.running_max_logdet),
                            bool(self.strict_switch), bool(self.h_divide_e))
        self.stats = SolverStats()
        self.Z_w = GrowingNewton(d, 16, self.link, self.lambda_fit, cap=self.cap, stats=self.stats)
        self.Z_tau = GrowingNewton(
            d, problem.horizon, self.link, self.lambda_fit, cap=self.cap, stats=self.stats
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
            lambda_fit = lam / 2 if self.variant == "SW" else VARIANT_LAMBDA_FIT[self.variant]
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

    # -- the state, by name --------------------------------------------------------------------

    V = property(lambda self: self.state.V)
    V_inv = property(lambda self: self.state.V_inv)
    H_cur = property(lambda self: self.state.H_cur)
    H_cur_inv = property(lambda self: self.state.H_cur_inv)
    H_prev = property(lambda self: self.state.H_prev)
    H_prev_inv = property(lambda self: self.state.H_prev_inv)
    theta_w = property(lambda self: self.state.theta_w)
    theta_tau = property(lambda self: self.state.theta_tau)

    @property
    def aliased(self) -> bool:
        """Whether H_prev is H_cur (after a switch with `alias_bug`)."""
        return bool(self.state.aliased[0])

    # -- policy ------------------------------------------------------------------------------

    def select(self, t: int, arms: np.ndarray) -> int:
        """Warm-up, switch check with θ_τ refit, elimination, optimistic choice."""
        self.warmup_flag = warmup_index(arms, self.state.V_inv, self.thr_w) >= 0
        if self.warmup_flag:
            self.warmup_rounds.append(t)
        elif rs_switch_due(self.state, self.cfg):
            self._switch(t)
        return rs_glinucb_arm(arms, self.state, self.cfg)

    def play_table(self, tables: OutcomeTables) -> None:
        """Stretches of rounds that neither warm up nor switch in one compiled call each; the
        rounds that do (and make fits) through `select` and `update`."""
        self.Z_tau.reserve(len(tables.chosen))
        play_rounds(self, tables, self._compiled_rounds)

    def _compiled_rounds(self, tables: OutcomeTables, t: int) -> int:
        """Rounds from t on in one compiled call, until one that warms up or switches; the next
        round to play."""
        played = rs_glinucb_rounds(tables, t, self.Z_tau.arrays, self.state, self.cfg)
        if played > t:
            self.warmup_flag = False
        return played

    def _fit(self, data: GrowingNewton, theta0: np.ndarray) -> tuple[np.ndarray, bool]:
        if self.solver == "newton":
            return data.solve(theta0)
        n = data.n
        return compat_mle(data.X[:n], data.r[:n], self.link, self.lambda_fit, theta0,
                          stats=self.stats)

    def _switch(self, t: int) -> None:
        """H_prev ← copy of H_cur (or alias), refit θ_τ on the stored data."""
        state = self.state
        self.switch_times.append(t)
        logdet_cur = log_det_spd(state.H_cur)
        if self.alias_bug:
            state.aliased[0] = 1
        else:
            state.H_prev[:] = state.H_cur
            state.H_prev_inv[:] = state.H_cur_inv
            state.logs[LOGDET_PREV] = logdet_cur
        state.logs[MAX_PREV] = max(state.logs[MAX_PREV], logdet_cur)
        if self.Z_tau.n > 0:
            theta, success = self._fit(self.Z_tau, state.theta_tau)
            self.fits_tau += 1
            if success:
                state.theta_tau[:] = theta

    def update(self, t: int, x: np.ndarray, r: float) -> None:
        """Store (x, r); refit θ_w after a warm-up round, else grow H_cur."""
        state = self.state
        if self.warmup_flag:
            self.Z_w.add(x, r)
            if self.tau_includes_warmup:
                self.Z_tau.add(x, r)
            theta, success = self._fit(self.Z_w, (state.theta_w + state.theta_tau) / 2)
            self.fits_w += 1
            if success:
                state.theta_w[:] = theta
            return
        self.Z_tau.reserve(1)
        rs_glinucb_update(self.Z_tau.arrays, state, self.cfg, x, r)

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

