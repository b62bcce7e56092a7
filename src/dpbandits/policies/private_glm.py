"""Private-GLM: joint-DP rarely-switching GLM bandit, Algorithm 2 (docs/glm.md).

Two accounting modes. `paper` follows the authors' code: instance κ, κ*, trees calibrated with
C = 1 and 1/κ*, DP-SGD per fit at split(ε/3, δ/3, cutoff), Criterion-I samples also in Z_nw, and
the warm-up fits triggered by a user's own contexts without noise; its ledger records the actual
costs and states that joint DP does not hold against a change of one user's contexts. `strict`
is the theorem's guarantee for that relation: public κ bounds, contexts clipped to the unit
ball, replace-one tree sensitivities, disjoint fit data, full-batch noisy projected GD, warm-up
fits triggered by a private tree counter of warm-up rounds, the Criterion-II check in every
round, and one zCDP budget that the ledger checks at the end.

In paper accounting, `code_state` picks the authors' code replicated: `d9c93e1` (default, the
corrected tree and switching rule) or their initial commit `ab8fd16`, which made the published
Figure 1: its tree query sums the wrong nodes, Criterion II compares determinants, the cutoffs
lack the factor 3 and the floor at 1, and DP-SGD runs a fixed 50 epochs with its own
calibration (docs/glm.md, "Code state ab8fd16").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np

from dpbandits.audit.spec import GLM_PAIR, UNIT_NORMS, PolicyAudit
from dpbandits.contract import OutcomeTables, ProblemInfo
from dpbandits.errors import ConfigError
from dpbandits.links import get_link
from dpbandits.params import Declaration, boolean, choice, integer, number
from dpbandits.policies.base import Policy
from dpbandits.policies.private_glm_rounds import (
    AB8FD16,
    ARM,
    DECIDED,
    DISCARDED,
    FIT_W,
    N1,
    N2,
    N_NW,
    N_W,
    N_WARMUP,
    PAPER,
    ROUND_DONE,
    START,
    STOP1,
    STOP2,
    STRICT,
    WARM,
    RoundConstants,
    private_glm_rounds,
    round_state,
    select_round,
    switch_h_prev,
    ucb_arm,
    update_round,
)
from dpbandits.privacy import dpsgd_ab8fd16
from dpbandits.privacy.accountant import ENGINES
from dpbandits.privacy.dpsgd import (
    FitResult,
    dpsgd_fit,
    noisy_gd_fit,
    replace_one_epsilon,
)
from dpbandits.privacy.exact_noise import noise_for
from dpbandits.privacy.release import recording_active, replaying
from dpbandits.privacy.split import NAIVE_MAX_K, advanced_composition, split
from dpbandits.privacy.tree import (
    MatrixTree,
    release_cost,
    tree_calibration,
    tree_height,
    tree_rho,
    tree_sigma,
    unused_state,
)
from dpbandits.privacy.zcdp import epsilon_from_rho, rho_from_epsilon

SWITCH_SLACK = 1e-8
V_SENSITIVITY = math.sqrt(2.0)  # ‖x xᵀ/(1 + m) − x' x'ᵀ/(1 + m')‖_F, ‖x‖ ≤ 1 (App. J.3)
E = math.e
CODE_STATES = ("d9c93e1", "ab8fd16")  # the authors' corrected code, their initial commit
AB8FD16_LOG_DET_RATIO = math.log(2.0)  # ab8fd16's Criterion II: max det H_cur ≥ 2·max det H_prev


@dataclass(frozen=True)
class PrivateGLMConstants:
    """Algorithm 2's constants (docs/glm.md, "Algorithm 2: Private-GLM")."""

    lam: float
    lam_max: float
    lam_min: float
    gamma: float
    beta: float
    thr_w: float
    c1: int
    c2: int
    f_sw: float
    kappa: float
    kappa_star: float


def private_glm_constants(d: int, horizon: int, S: float, R: float, kappa: float,
                          kappa_star: float, epsilon: float, delta: float,
                          zeta: float, code_state: str = "d9c93e1") -> PrivateGLMConstants:
    """λ, λ_max, λ_min, γ, β, thr_w, c₁, c₂, f_sw from (R, S, T, ε, δ, ζ, κ, κ*).

    The authors' code values; the paper's are in its Section 6 and Appendix J.1, and its
    Appendix B treats them as hyper-parameters (docs/glm.md, "Algorithm 2: Private-GLM").
    `code_state="ab8fd16"`: c₁ = ⌊dR²κγ² ln T/20000⌋ and c₂ = ⌊log₂(…)⌋, as that commit.
    """
    l_t = math.log(4.0 * horizon / zeta)
    a = math.log(4.0 / delta) * l_t**2 / (epsilon * kappa_star)
    lam = 2.0 * a + 0.75 * d * l_t / R**2
    lam_max, lam_min = lam + 1.5 * a, lam - 1.5 * a
    gamma = R * S * math.sqrt(d * math.log(horizon / zeta))
    beta = 4.0 * math.sqrt(d * math.log(horizon / zeta))
    thr_w = 1.0 / (0.01 * kappa * R**4 * S**2 * d)
    c1 = math.floor(d * R**2 * kappa * gamma**2 * math.log(horizon) / 20000.0)
    switch_log = math.log2(lam_max / lam_min + horizon / (kappa_star**2 * lam_min * d))
    if code_state == "ab8fd16":
        c2 = math.floor(switch_log)
    else:
        c1, c2 = max(1, c1), max(1, math.floor(3.0 * switch_log))
    f_sw = 1.0 + 5.0 / (8.0 * math.sqrt(d)) + 0.05
    return PrivateGLMConstants(lam, lam_max, lam_min, gamma, beta, thr_w, c1, c2, f_sw,
                               kappa, kappa_star)


def warmup_count_margin(sigma_node: float, horizon: int, zeta: float) -> float:
    """E = σ√h·√(2 ln(T/ζ)): the released count exceeds the true count by more than E in some
    round with probability ≤ ζ (a path sums ≤ h nodes of N(0, σ²); union bound over T rounds)."""
    return sigma_node * math.sqrt(tree_height(horizon) * 2.0 * math.log(horizon / zeta))


GLM_AUDIT_NOTE = ("paper mode triggers a θ_w fit from user 0's own contexts without noise (its "
                  "ledger records a breach)")


def _context_audit(name: str, instance: dict[str, Any], other_norm: float | None, runs: int,
                   epsilon: float, **kwargs: Any) -> PolicyAudit:
    """A whole-record pair: user 0's arms of norm 1 (Criterion I fires) or 0.05 (it does not);
    the other users' arms of a norm above strict mode's Criterion-I threshold and below paper
    mode's, so that strict transcripts depend on the noisy V (docs/audits.md)."""
    return PolicyAudit(name=name, policy="Private-GLM", instance=instance, pair="context",
                       arm_norms=UNIT_NORMS, other_norm=other_norm, default_runs=runs,
                       epsilon=epsilon, delta=0.02, **kwargs)


PRIVATE_GLM_AUDITS = (
    _context_audit("Private-GLM@context-d2", GLM_PAIR, 0.36, 400, 1.0, paper_leaks=True,
                   note="the smallest context pair (probit, d = 2, S = 4, T = 20, (1, 0.02)); "
                        + GLM_AUDIT_NOTE),
    _context_audit("Private-GLM@context-d3", {**GLM_PAIR, "d": 3}, 0.31, 400, 1.0,
                   paper_leaks=True, note=GLM_AUDIT_NOTE),
    _context_audit("Private-GLM@context-d5", {**GLM_PAIR, "family": "logistic", "d": 5,
                                              "S": 5.0}, 0.66, 1000, 4.0, paper_leaks=True,
                   note=GLM_AUDIT_NOTE),
    _context_audit("Private-GLM@context-d5-ab8fd16", {**GLM_PAIR, "family": "logistic",
                                                      "d": 5, "S": 5.0}, 0.66, 5000, 4.0,
                   params={"code_state": "ab8fd16"}, modes=("paper",), paper_leaks=True,
                   note="the d = 5 pair on the initial commit's code state (paper accounting "
                        "only; at the d = 2 pair its calibration cannot reach the warm-up "
                        "fits' ε₀); " + GLM_AUDIT_NOTE),
    _context_audit("Private-GLM@context-fits", {**GLM_PAIR, "horizon": 100}, None, 300, 2.0,
                   params={"counter_share": 0.9, "zeta": 0.5}, modes=("strict",),
                   note="T = 100, every user's arms as drawn: the private counter of "
                        "Criterion-I rounds triggers about ten θ_w fits per run"),
)


class PrivateGLM(Policy):
    """Algorithm 2 (paper Section 6): warm-up by Criterion I on a private V, private H tree with
    generalised-eigenvalue switching (Criterion II), elimination with θ_w, UCB with H_prev.

    Hyper-parameters are declared in `parameters` (`dpbandits list algorithms`).
    """

    name: ClassVar[str] = "Private-GLM"
    audits: ClassVar[tuple[PolicyAudit, ...]] = PRIVATE_GLM_AUDITS
    private: ClassVar[bool] = True
    plays_tables: ClassVar[bool] = True
    decision_rule = staticmethod(ucb_arm)
    update_rule = staticmethod(update_round)
    families: ClassVar[tuple[str, ...]] = ("logistic", "probit")
    parameters: ClassVar[Declaration] = (
        number("zeta", None, "failure probability ζ of λ, γ, β and the counter margin "
               "(null: δ)", gt=0, lt=1, nullable=True),
        number("clip", 0.2, "per-sample gradient clip C of the private fits", gt=0),
        number("lr0", 10.0, "step size lr_k = lr0/√k of the private fits", gt=0),
        number("lambda_fit", 1e-5, "regulariser of the private fits", ge=0),
        integer("strict_steps", 12, "strict: K noisy gradient steps per fit", ge=1),
        integer("strict_burn_in", 5, "strict: iterates averaged after this many steps", ge=0),
        boolean("reserve_switch_budget", False, "strict: the paper's three-way split (trees "
                "ρ/3, fits ρ/3, ρ/3 unused)"),
        number("counter_share", 0.5, "strict: part of the warm-up budget spent on the private "
               "counter of warm-up rounds (the rest pays the θ_w fits)", gt=0, lt=1),
        choice("accountant_engine", "fast", "paper: RDP accountant, numpy (fast) or "
               "dp_accounting", ENGINES),
        boolean("noiseless", False, "paper: every noise scaled to zero (sanity checks)"),
        choice("code_state", "d9c93e1", "paper: the authors' code state replicated, d9c93e1 "
               "(corrected tree and switching) or their initial commit ab8fd16 (the published "
               "Figure 1)", CODE_STATES),
    )

    def __init__(self, problem: ProblemInfo, rng: np.random.Generator, **kwargs: Any) -> None:
        super().__init__(problem, rng, **kwargs)
        p = self.params
        self.zeta = float(self.delta) if p["zeta"] is None else float(p["zeta"])
        self.clip = float(p["clip"])
        self.lr0 = float(p["lr0"])
        self.lambda_fit = float(p["lambda_fit"])
        self.reserve = p["reserve_switch_budget"]
        self.counter_share = float(p["counter_share"])
        self.engine = p["accountant_engine"]
        self.noiseless = p["noiseless"]
        self.strict = self.accounting == "strict"
        self.ab8fd16 = p["code_state"] == "ab8fd16"
        self.link = get_link(problem.family)
        d, horizon = problem.d, problem.horizon
        eps, delta = float(self.epsilon), float(self.delta)  # type: ignore[arg-type]
        if self.strict:
            kappa, kappa_star = problem.kappa_pub, problem.kappa_star_pub
        else:
            kappa, kappa_star = problem.kappa, problem.kappa_star
        self.const = c = private_glm_constants(d, horizon, problem.S, problem.R, kappa,
                                               kappa_star, eps, delta, self.zeta,
                                               p["code_state"])
        self.height = tree_height(horizon)
        self.switch_above = c.f_sw + SWITCH_SLACK  # Criterion II switches above this
        self.width_scale = c.gamma * math.sqrt(c.kappa)  # elimination width ÷ ‖x‖_{V⁻¹}
        self.noise = noise_for(self.accounting, rng)
        self._setup_budget(eps, delta)
        tree_noise = self.noise if self.strict else None
        cover = "ab8fd16" if self.ab8fd16 else "dyadic"
        self.vtree = MatrixTree(horizon, d, self.sigma_v, rng, shift=c.lam, noise=tree_noise,
                                cover=cover, eager=True)
        self.htree = MatrixTree(horizon, d, self.sigma_h, rng, shift=c.lam, noise=tree_noise,
                                cover=cover, eager=True)
        self.state = round_state(d, horizon, problem.K, c.lam)
        self.switch_times: list[int] = []
        self.fits: list[tuple[int, int, FitResult, float]] = []  # (t, kind, fit, actual ε)
        counter = unused_state()
        if self.strict:
            counter_rng = rng.spawn(1)[0]
            self.counter = MatrixTree(horizon, 1, self.sigma_count, counter_rng, eager=True,
                                      noise=noise_for("strict", counter_rng))
            counter = self.counter.state
            self.warm_counts: list[float] = []
        if self.ab8fd16:
            # ab8fd16's fits draw from numpy's global generator, apart from the trees' stream:
            # here a child stream of the policy's generator, so the shard seed fixes both.
            self.fit_rng = rng.spawn(1)[0]
        mode = STRICT if self.strict else AB8FD16 if self.ab8fd16 else PAPER
        self.constants = RoundConstants(
            mode, self.link.kind, c.thr_w, c.beta, self.width_scale, self.switch_above,
            AB8FD16_LOG_DET_RATIO, self.count_margin if self.strict else 0.0)
        self.trees = (self.vtree.state, self.htree.state, counter)

    # ------------------------------------------------------------------ the kernels' state

    def _count(self, slot: int) -> int:
        return int(self.state.counts[slot])

    n_w = property(lambda self: self._count(N_W), doc="samples in Z_w")
    n_nw = property(lambda self: self._count(N_NW), doc="samples in Z_nw")
    discarded = property(lambda self: self._count(DISCARDED),
                         doc="Criterion-I samples discarded after the c₁ θ_w fits")
    n1 = property(lambda self: self._count(N1), doc="θ_w fits made")
    n2 = property(lambda self: self._count(N2), doc="switches (θ_τ fits) made")
    stop1 = property(lambda self: bool(self._count(STOP1)), doc="the c₁ θ_w fits are made")
    stop2 = property(lambda self: bool(self._count(STOP2)), doc="the c₂ switches are made")
    v = property(lambda self: self.state.v, doc="the released V")
    h_cur = property(lambda self: self.state.h_cur, doc="the released H")
    h_prev = property(lambda self: self.state.h_prev, doc="H at the last switch")
    logdet_cur = property(lambda self: float(self.state.logdets[0]),
                          doc="ab8fd16: the running maximum of log det H_cur")
    logdet_prev = property(lambda self: float(self.state.logdets[1]),
                           doc="ab8fd16: the running maximum of log det H_prev")
    zw_x = property(lambda self: self.state.zw_x)
    zw_y = property(lambda self: self.state.zw_y)
    znw_x = property(lambda self: self.state.znw_x)
    znw_y = property(lambda self: self.state.znw_y)

    @property
    def theta_w(self) -> np.ndarray:
        """θ_w, the warm-up estimate (the paper's θ̂_o)."""
        return self.state.theta_w

    @property
    def theta_tau(self) -> np.ndarray:
        """θ_τ, the estimate refitted at each switch."""
        return self.state.theta_tau

    @property
    def warmup_times(self) -> list[int]:
        """The Criterion-I rounds so far."""
        return self.state.warmup_times[: self._count(N_WARMUP)].tolist()

    def _bump(self, slot: int, stop: int, cutoff: int) -> None:
        """counts[slot] += 1, and counts[stop] set once it reaches `cutoff`."""
        self.state.counts[slot] += 1
        if self.state.counts[slot] == cutoff:
            self.state.counts[stop] = 1

    @classmethod
    def check_combined(cls, params: dict[str, Any], accounting: str) -> None:
        """Burn-in shorter than the fit; noise switched off only as a paper-mode check."""
        if params["strict_burn_in"] >= params["strict_steps"]:
            raise ConfigError(f"{cls.name}: strict_burn_in = {params['strict_burn_in']!r} is "
                              f"not allowed; must be < strict_steps = {params['strict_steps']}")
        if params["noiseless"] and accounting == "strict":
            raise ConfigError(f"{cls.name}: noiseless = true is not allowed with accounting = "
                              "strict; allowed only with accounting = paper")
        if params["code_state"] != "d9c93e1" and accounting == "strict":
            raise ConfigError(f"{cls.name}: code_state = {params['code_state']!r} is not "
                              "allowed with accounting = strict; allowed only with accounting "
                              "= paper (strict allows code_state = 'd9c93e1')")

    # ------------------------------------------------------------------ privacy budget

    def _setup_budget(self, eps: float, delta: float) -> None:
        c = self.const
        horizon = self.problem.horizon
        sup_dot = self.link.sup_dot
        ledger = self.ledger
        assert ledger is not None
        if self.strict:
            self.rho_total = rho_from_epsilon(eps, delta)
            share = self.rho_total / (6.0 if self.reserve else 4.0)
            self.rho_tree = share
            self.rho_count = share * self.counter_share
            self.rho_fit1 = share * (1.0 - self.counter_share) / c.c1
            self.rho_fit2 = share / c.c2
            d = self.problem.d
            self.sigma_v, self.sens_v = tree_calibration(self.noise, share, horizon,
                                                         V_SENSITIVITY, d)
            self.sigma_h, self.sens_h = tree_calibration(self.noise, share, horizon,
                                                         math.sqrt(2.0) * sup_dot / E, d)
            self.sigma_count, count_sens = tree_calibration(self.noise, self.rho_count, horizon,
                                                            1.0, 1)
            self.count_margin = warmup_count_margin(self.sigma_count, horizon, self.zeta)
            self.tree_entries = {}
            for comp, sens, sigma in (("V-tree", self.sens_v, self.sigma_v),
                                      ("H-tree", self.sens_h, self.sigma_h),
                                      ("warm-up counter", count_sens, self.sigma_count)):
                scale = self.noise.effective_sigma(sigma)  # the σ the node sampler draws at
                self.tree_entries[comp] = ledger.add(
                    "binary-tree discrete Gaussian (zCDP)", comp, sensitivity=sens,
                    noise_scale=scale, rho=tree_rho(scale, sens, horizon),
                    note=f"replace-one sensitivity incl. grid rounding; {self.height} nodes "
                         "per path share rho equally")
            ledger.add("post-processing", "switching rule", sensitivity=0.0, noise_scale=0.0,
                       rho=0.0, note="warm-up fits are triggered by the released counter, "
                                     "Criterion II by the released H; a user's own contexts "
                                     "decide only that user's own action and leaves")
            return
        third_eps, third_delta = eps / 3.0, delta / 3.0
        # ab8fd16's cutoffs can be 0; that commit divides the fit budget by them when it fits
        self.eps_fit1 = split(third_eps, third_delta, c.c1) if c.c1 >= 1 else None
        self.eps_fit2 = split(third_eps, third_delta, c.c2) if c.c2 >= 1 else None
        c_h = 1.0 / c.kappa_star
        self.sigma_v = 0.0 if self.noiseless else tree_sigma(third_eps, third_delta, horizon, 1.0)
        self.sigma_h = 0.0 if self.noiseless else tree_sigma(third_eps, third_delta, horizon, c_h)
        self.sens_v = V_SENSITIVITY
        self.sens_h = math.sqrt(2.0) * sup_dot / E
        self.tree_actual: dict[str, float] = {}
        self.tree_entries = {}
        # per-leaf cost in node variances: h for the dyadic cover's argument, exact for ab8fd16
        self.tree_cost = release_cost(horizon, "ab8fd16")[0] if self.ab8fd16 else self.height
        for comp, claimed_c, sens, sigma in (("V-tree", 1.0, self.sens_v, self.sigma_v),
                                             ("H-tree", c_h, self.sens_h, self.sigma_h)):
            if sigma > 0:
                rho = self.tree_cost * sens**2 / (2.0 * sigma**2)
                actual = epsilon_from_rho(rho, third_delta)
            else:
                actual = math.inf
            self.tree_actual[comp] = actual
            note = (f"claimed ({third_eps:.6g}, {third_delta:.6g}) with C = {claimed_c:.6g}; "
                    f"actual replace-one sensitivity {sens:.6g}")
            if comp == "H-tree":
                note += "; C = 1/kappa* is computed from theta* and all contexts"
            mechanism = "binary-tree Gaussian (zCDP)"
            if self.ab8fd16:
                mechanism = "binary-tree Gaussian, ab8fd16 node set (exact linear-Gaussian cost)"
                note += "; " + self._ab8fd16_tree_note()
            self.tree_entries[comp] = ledger.add(mechanism, comp, sensitivity=sens,
                                                 noise_scale=sigma, epsilon=actual,
                                                 delta=third_delta, note=note)
        ledger.add("data-dependent parameters", "kappa, kappa*", sensitivity=0.0,
                   noise_scale=0.0, epsilon=0.0, delta=0.0,
                   note=f"kappa = {c.kappa:.6g}, kappa* = {c.kappa_star:.6g} computed from theta* "
                        "and all T*K contexts; they set lambda, thresholds, cutoffs, H-tree C")
        ledger.add("post-processing", "switching rule", sensitivity=0.0, noise_scale=0.0,
                   epsilon=0.0, delta=0.0,
                   note="the paper budgets eps/3 for switching times; its code adds no noise "
                        "for it")
        ledger.breach("a warm-up fit (Criterion I) is triggered by the user's own contexts "
                      "without noise and changes theta_w, which every later user's action "
                      "depends on: joint DP does not hold against a change of one user's "
                      "contexts")
        ledger.breach("kappa and kappa* are computed from all contexts and set thresholds and "
                      "noise: a change of one user's contexts can change them")

    def _ab8fd16_tree_note(self) -> str:
        """What ab8fd16's tree releases and what a record pays for it (docs/glm.md)."""
        horizon, h = self.problem.horizon, self.height
        cost, leaf, heaviest = release_cost(horizon, "ab8fd16")
        return (f"ab8fd16's query sums leaf s and node c-1 for every even node c on the path "
                f"of leaf s, not the dyadic cover: for s <= {1 << (h - 2)} it adds the root's "
                "partial sum (one noise draw reused at every such s) and data-free nodes of "
                "the tree's right edge, and it weights the leaves of [1, s] 0 to "
                f"{heaviest} times, so the release is not the prefix sum; the standard "
                f"argument (a record in {h} noisy nodes, each released once complete) does not "
                f"apply, but the {horizon} releases are one linear Gaussian mechanism whose "
                f"exact replace-one cost is rho = {cost:.6g} * sensitivity^2/(2 sigma^2) "
                f"(worst leaf {leaf}; the dyadic tree's argument gives {h})")

    def _record_fit(self, t: int, kind: int, fit: FitResult) -> None:
        ledger = self.ledger
        assert ledger is not None
        comp = "theta_w fits" if kind == 0 else "theta_tau fits"
        if self.strict:  # its ledger entry is the fit's release's (`noisy_gd_fit`)
            self.fits.append((t, kind, fit, math.nan))
            return
        if self.ab8fd16:
            actual = math.inf if self.noiseless else dpsgd_ab8fd16.replace_one_epsilon(fit)
            b_min = dpsgd_ab8fd16.smallest_batch(fit) if fit.n else 0
            ledger.add("DP-SGD, ab8fd16 (fixed epochs, no amplification)", comp,
                       sensitivity=2.0 * self.clip, noise_scale=fit.sigma * self.clip,
                       epsilon=actual, delta=fit.delta,
                       note=f"claimed ({fit.epsilon:.6g}, {fit.delta:.6g}) by ab8fd16's "
                            f"calibration (RDP steps*alpha*q^2/(2 sigma^2), orders <= 508) at "
                            f"sensitivity C = {self.clip}; n = {fit.n}, b = {fit.batch}, "
                            f"smallest batch {b_min}, E = {fit.epochs}, "
                            f"sigma = {fit.sigma:.6g}; actual: E Gaussian steps at multiplier "
                            "sigma*b_min/(2b), one per epoch for every record")
            self.fits.append((t, kind, fit, actual))
            return
        actual = math.inf if self.noiseless else replace_one_epsilon(fit, engine=self.engine)
        ledger.add("DP-SGD (w/o-replacement sampling, RDP)", comp,
                   sensitivity=2.0 * self.clip, noise_scale=fit.sigma * self.clip,
                   epsilon=actual, delta=fit.delta,
                   note=f"claimed ({fit.epsilon:.6g}, {fit.delta:.6g}) at sensitivity C = "
                        f"{self.clip}; n = {fit.n}, b = {fit.batch}, E = {fit.epochs}, "
                        f"sigma = {fit.sigma:.6g}")
        self.fits.append((t, kind, fit, actual))

    # ------------------------------------------------------------------ the algorithm

    def _fit(self, t: int, kind: int) -> None:
        """θ_w (kind 0, data Z_w) or θ_τ (kind 1, data Z_nw) from init (θ_w + θ_τ)/2."""
        init = 0.5 * (self.theta_w + self.theta_tau)
        if kind == 0:
            x, y = self.zw_x[: self.n_w], self.zw_y[: self.n_w]
        else:
            x, y = self.znw_x[: self.n_nw], self.znw_y[: self.n_nw]
        if self.strict:
            rho = self.rho_fit1 if kind == 0 else self.rho_fit2
            fit = noisy_gd_fit(init, x, y, rho, self.link, self.rng, radius=self.problem.S,
                               noise=self.noise, ledger=self.ledger,
                               name="theta_w fits" if kind == 0 else "theta_tau fits",
                               steps=self.params["strict_steps"],
                               burn_in=self.params["strict_burn_in"], clip=self.clip,
                               lam=self.lambda_fit, lr0=self.lr0)
        elif self.ab8fd16:
            budget = self.eps_fit1 if kind == 0 else self.eps_fit2
            if budget is None:
                cutoff = "count1_cutoff" if kind == 0 else "count2_cutoff"
                raise ConfigError(f"{self.name}: code_state = 'ab8fd16' has {cutoff} = 0 at "
                                  f"this instance and ε; its fit budget split(ε/3, δ/3, 0) "
                                  "divides by zero (that commit fails here too)")
            fit = dpsgd_ab8fd16.dpsgd_fit(init, x, y, budget[0], budget[1], self.link,
                                          self.fit_rng, clip=self.clip, lam=self.lambda_fit,
                                          lr0=self.lr0, noiseless=self.noiseless)
        else:
            eps0, delta0 = self.eps_fit1 if kind == 0 else self.eps_fit2  # type: ignore[misc]
            fit = dpsgd_fit(init, x, y, eps0, delta0, self.link, self.rng, clip=self.clip,
                            lam=self.lambda_fit, lr0=self.lr0, noiseless=self.noiseless,
                            engine=self.engine,
                            name="theta_w DP-SGD steps" if kind == 0 else "theta_tau DP-SGD steps")
        self._record_fit(t, kind, fit)
        (self.state.theta_w if kind == 0 else self.state.theta_tau)[:] = fit.theta

    @property
    def clips_contexts(self) -> bool:
        """Strict: contexts are private data, clipped to the unit ball that Δ_V, Δ_H assume."""
        return self.strict

    def select(self, t: int, arms: np.ndarray) -> int:
        """Round t's arm (`select_round`), switching where Criterion II asks for it."""
        self._room(self.vtree)
        phase = START
        arms = np.ascontiguousarray(arms, dtype=float)
        self._per_arm(len(arms))
        while (phase := self._select_step(phase, arms)) != DECIDED:
            self.switch(t)
        return int(self.state.counts[ARM])

    def _select_step(self, phase: int, arms: np.ndarray) -> int:
        """`select_round` from `phase`; in audit mode the V-tree node its leaf completes is a
        release (`_audited`)."""
        def step() -> int:
            return select_round(phase, arms, self.state, self.constants, self.trees[0])

        if not recording_active():
            return step()
        return self._audited(step, ((self.vtree, "V-tree"),))

    def _audited(self, step: Callable[[], int], trees: tuple[tuple[MatrixTree, str], ...]
                 ) -> int:
        """A kernel call whose leaves complete tree nodes, each then a release
        (`MatrixTree.release_node`). Replaying, a node whose noise the replay changed makes
        the call run again from the state before it, with the same leaves: its queries then
        sum the replayed node releases (docs/audits.md, "Release checks")."""
        before = self._snapshot() if replaying() else None
        counts = [tree.count for tree, _ in trees]
        result = step()
        changed = False
        for (tree, comp), count in zip(trees, counts, strict=True):
            if tree.count != count:
                changed |= tree.release_node(self.noise, tree.state.prefix,
                                             name=f"{comp} node",
                                             sensitivity=self.tree_sensitivity(comp),
                                             entry=self.tree_entries.get(comp))
        if changed and before is not None:
            self._restore(before)
            result = step()
        return result

    def tree_sensitivity(self, comp: str) -> float:
        """The declared sensitivity of one of the trees' nodes (snapped leaves in strict)."""
        entry = self.tree_entries.get(comp)
        return entry.sensitivity if entry is not None else self.sens_v

    def _arrays(self) -> list[np.ndarray]:
        """Every array the round kernels write: the round state and the trees' sums."""
        trees = [self.vtree, self.htree, *((self.counter,) if self.strict else ())]
        return [*self.state, *(a for tree in trees
                               for a in (tree.state.prefix, tree.state.node_sums,
                                         tree.state.count))]

    def _snapshot(self) -> list[np.ndarray]:
        return [a.copy() for a in self._arrays()]

    def _restore(self, snapshot: list[np.ndarray]) -> None:
        for a, b in zip(self._arrays(), snapshot, strict=True):
            np.copyto(a, b)

    def update(self, t: int, x: np.ndarray, r: float) -> None:
        """Round t's update with (x, r) (`update_round`), and the θ_w fit it may call for."""
        self._room(self.htree, *((self.counter,) if self.strict else ()))  # a leaf a round
        x = np.ascontiguousarray(x, dtype=float)

        def step() -> int:
            return update_round(t, x, float(r), self.state, self.constants, *self.trees[1:])

        if not recording_active():
            due = step()
        else:
            due = self._audited(step, ((self.htree, "H-tree"),
                                       *(((self.counter, "warm-up counter"),)
                                         if self.strict else ())))
        if due == FIT_W:
            self.warm_fit(t)

    def _per_arm(self, K: int) -> None:
        """Work arrays of one value per arm for rounds of K arms."""
        if len(self.state.norms) != K:
            self.state = self.state._replace(norms=np.empty(K), scores=np.empty(K))

    @staticmethod
    def _room(*trees: MatrixTree) -> None:
        """One more leaf fits in every tree, else the tree's error."""
        for tree in trees:
            if tree.count >= tree.horizon:
                raise ValueError(f"MatrixTree: update {tree.count + 1} exceeds horizon "
                                 f"{tree.horizon}")

    def play_table(self, tables: OutcomeTables) -> None:
        """Every round on the tables (`private_glm_rounds`), switches and θ_w fits made here
        at the round the loop stops at."""
        rounds = len(tables.arms)
        if rounds + max(self.vtree.count, self.htree.count) > self.problem.horizon:
            raise ValueError(f"{self.name}: {rounds} rounds exceed the horizon "
                             f"{self.problem.horizon}")
        self._per_arm(tables.arms.shape[1])
        t, phase = 0, START
        while True:
            t, phase = private_glm_rounds(t, phase, tables, self.state, self.constants,
                                          *self.trees)
            if t == len(tables.arms):
                return
            if phase == ROUND_DONE:
                self.warm_fit(t)
            else:
                self.switch(t)

    def switch(self, t: int) -> None:
        """H_prev ← H_cur and a θ_τ fit on Z_nw (Criterion II); it stops after c₂ switches."""
        switch_h_prev(self.state, self.constants, self.htree.psd_floor)
        self.switch_times.append(t)
        self._fit(t, 1)
        self._bump(N2, STOP2, self.const.c2)

    def warm_fit(self, t: int) -> None:
        """A θ_w fit on Z_w (paper: after a Criterion-I sample; strict: once the counter's
        released count less the margin reaches n₁ + 1); it stops after c₁ fits."""
        if self.strict:
            self.warm_counts.append(float(self.state.released[0]))
        self._fit(t, 0)
        self._bump(N1, STOP1, self.const.c1)

    @property
    def _warm(self) -> bool:
        """Whether the last selected arm was Criterion I's."""
        return bool(self.state.counts[WARM])

    # ------------------------------------------------------------------ reporting

    def finish(self) -> None:
        """Paper mode: state the authors' claim next to the breach; strict needs nothing."""
        if self.strict:
            return
        eps, delta = float(self.epsilon), float(self.delta)  # type: ignore[arg-type]
        actual, _ = self._paper_actual_total()
        self.ledger.state_claim(  # type: ignore[union-attr]
            eps, delta, "the paper's split: V-tree, H-tree, warm-up fits, Criterion-II fits at "
            f"(eps/3, delta/3) each; against neighbours that change only a reward the code "
            f"spends {actual:.6g} (worst-case basic composition at actual replace-one costs)")

    def _paper_actual_total(self) -> tuple[float, float]:
        delta3 = float(self.delta) / 3.0  # type: ignore[arg-type]
        eps_total = sum(self.tree_actual.values())
        delta_total = 2.0 * delta3
        for kind, cutoff in ((0, self.const.c1), (1, self.const.c2)):
            costs = [(a, f.delta) for (_, k, f, a) in self.fits if k == kind]
            if not costs:
                continue
            basic = (sum(a for a, _ in costs), sum(dl for _, dl in costs))
            if cutoff > NAIVE_MAX_K:
                adv = advanced_composition(max(a for a, _ in costs), costs[0][1], len(costs),
                                           delta3 / 2.0)
                basic = min(basic, adv)
            eps_total += basic[0]
            delta_total += basic[1]
        return eps_total, delta_total

    def events(self) -> dict[str, np.ndarray]:
        fits = self.fits
        return {
            "switch_times": np.asarray(self.switch_times, dtype=np.int64),
            "warmup_times": np.asarray(self.warmup_times, dtype=np.int64),
            "fit_round": np.asarray([t for t, _, _, _ in fits], dtype=np.int64),
            "fit_kind": np.asarray([k for _, k, _, _ in fits], dtype=np.int64),
            "fit_n": np.asarray([f.n for _, _, f, _ in fits], dtype=np.int64),
            "fit_batch": np.asarray([f.batch for _, _, f, _ in fits], dtype=np.int64),
            "fit_epochs": np.asarray([f.epochs for _, _, f, _ in fits], dtype=np.int64),
            "fit_sigma": np.asarray([f.sigma for _, _, f, _ in fits], dtype=float),
            "fit_epsilon_actual": np.asarray([a for _, _, _, a in fits], dtype=float),
            **({"warmup_fit_counts": np.asarray(self.warm_counts, dtype=float)}
               if self.strict else {}),
        }

    def diagnostics(self) -> dict[str, float]:
        c = self.const
        out: dict[str, float] = {k: float(v) for k, v in asdict(c).items()}
        out.update(
            n1=float(self.n1), n2=float(self.n2), warmup_rounds=float(len(self.warmup_times)),
            discarded=float(self.discarded), switches=float(len(self.switch_times)),
            sigma_v=self.sigma_v, sigma_h=self.sigma_h,
            theta_w_norm=float(np.linalg.norm(self.theta_w)),
            theta_tau_norm=float(np.linalg.norm(self.theta_tau)),
        )
        if self.ab8fd16:
            out.update(tree_release_cost=float(self.tree_cost))
        eps = float(self.epsilon)  # type: ignore[arg-type]
        if self.strict:
            rho = self.ledger.rho_spent if self.ledger else math.nan
            out.update(rho_total=self.rho_total, rho_spent=rho,
                       epsilon_achieved=epsilon_from_rho(rho, float(self.delta))
                       if rho > 0 else 0.0,  # type: ignore[arg-type]
                       sigma_count=self.sigma_count, count_margin=self.count_margin)
        else:
            actual, _ = self._paper_actual_total()
            out.update(epsilon_claimed=eps, epsilon_claimed_worst=4.0 * eps / 3.0,
                       epsilon_actual=actual)
        return out
