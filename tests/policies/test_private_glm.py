"""Private-GLM, Algorithm 2 (docs/glm.md, "Algorithm 2: Private-GLM")."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dpbandits import runner
from dpbandits.contract import ProblemInfo
from dpbandits.errors import ConfigError
from dpbandits.instances.glm import GLMInstance
from dpbandits.links import get_link
from dpbandits.policies import make_policy
from dpbandits.policies import private_glm as pg
from dpbandits.policies import private_glm_rounds as rounds
from dpbandits.privacy.dpsgd import strict_sigma
from dpbandits.privacy.tree import MatrixTree
from dpbandits.privacy.zcdp import epsilon_from_rho

from helpers import assert_snapped_calibration, isolated_cache  # noqa: F401 (a fixture)

DELTA = 0.02


pytestmark = pytest.mark.usefixtures("isolated_cache")


# (d, T, S, κ, κ*) of the instances of docs/glm.md, "Non-linearity constants"; per ε: λ, λ_max,
# λ_min, c₂; then γ, β, c₁, thr_w.
TABLE2 = {4: (232.806, 384.097, 81.5152, 8), 6: (165.566, 266.427, 64.7051, 9),
          8: (131.946, 207.591, 56.3001, 9)}
FIG1A = {1: (645.183, 1087.12, 203.242, 7), 2: (350.556, 571.526, 129.585, 7),
         4: (203.242, 313.727, 92.7564, 7), 8: (129.585, 184.828, 74.3422, 6)}
FIG1B = {1: (858.694, 1463.86, 253.530, 8), 2: (455.251, 757.833, 152.669, 7),
         4: (253.530, 404.821, 102.239, 7), 8: (152.669, 228.314, 77.0233, 6)}
CONFIGS = [
    ((3, 5000, 2.0, 18.3936699115, 2.5066282747), TABLE2, (12.2127, 24.4254, 3, 0.453054)),
    ((3, 5000, 2.5, 56.4360057458, 2.5066282747), TABLE2, (15.2659, 24.4254, 16, 0.0945023)),
    ((3, 5000, 3.0, 222.1475133947, 2.5066282748), TABLE2, (18.3191, 24.4254, 95, 0.0166723)),
    ((5, 15000, 3.5, 33.7624543080, 4.0), FIG1A, (28.7851, 32.8972, 67, 0.0483571)),
    ((5, 5000, 3.0, 193.1841005125, 2.5066282746), FIG1B, (23.6498, 31.5331, 230, 0.0115031)),
]


@pytest.mark.parametrize("inst, per_eps, common", CONFIGS)
def test_parameter_table(inst: tuple, per_eps: dict, common: tuple) -> None:
    """Algorithm 2's constants at the Table 2 and Figure 1 settings (to 6 significant digits)."""
    d, horizon, S, kappa, kappa_star = inst
    for eps, (lam, lam_max, lam_min, c2) in per_eps.items():
        c = pg.private_glm_constants(d, horizon, S, 1.0, kappa, kappa_star, eps, DELTA, DELTA)
        assert (c.lam, c.lam_max, c.lam_min) == pytest.approx((lam, lam_max, lam_min), rel=1e-5)
        assert (c.gamma, c.beta, c.thr_w) == pytest.approx(
            (common[0], common[1], common[3]), rel=1e-5)
        assert (c.c1, c.c2) == (common[2], c2)
        assert c.f_sw == pytest.approx(1.4108439 if d == 3 else 1.3295085, rel=1e-7)


def _info(S: float = 2.0, d: int = 3, horizon: int = 5000, family: str = "probit",
          **kw: float) -> ProblemInfo:
    link = get_link(family)
    base = dict(family=family, d=d, K=20, horizon=horizon, S=S, R=1.0, kappa=18.39,
                kappa_star=2.5066, kappa_pub=link.kappa_public(S),
                kappa_star_pub=link.kappa_star_public)
    base.update(kw)
    return ProblemInfo(**base)  # type: ignore[arg-type]


def test_strict_example() -> None:
    """Strict-mode example: ε = 4, δ = 0.02, T = 5000, probit, S = 2.

    The values of docs/glm.md, "Strict mode: what changes and why".
    """
    pol = pg.PrivateGLM(_info(), np.random.default_rng(0), epsilon=4.0, delta=DELTA)
    assert pol.rho_total == pytest.approx(0.697139, rel=1e-5)
    # the published σ's, raised only by the grid rounding of exact noise (d × d leaves)
    assert_snapped_calibration(pol.sigma_v, 8.96261 * (1 - 5e-6), 8.96261 / math.sqrt(2), 9)
    assert_snapped_calibration(pol.sigma_h, 1.31538 * (1 - 5e-6), 1.31538 / 0.207554, 9)
    assert pol.const.c2 == 8
    assert strict_sigma(pol.rho_fit2) == pytest.approx(17.2732, rel=1e-5)
    assert 2 * 0.2 * strict_sigma(pol.rho_fit2) == pytest.approx(6.909, rel=1e-4)


def test_strict_uses_no_instance_quantity() -> None:
    """Strict constants and noise scales ignore the instance κ, κ* (public bounds only)."""
    a = pg.PrivateGLM(_info(), np.random.default_rng(0), epsilon=3.0, delta=DELTA)
    b = pg.PrivateGLM(_info(kappa=1e9, kappa_star=123.0), np.random.default_rng(0),
                      epsilon=3.0, delta=DELTA)
    assert a.const == b.const
    assert (a.sigma_v, a.sigma_h, a.rho_fit1, a.rho_fit2) == (
        b.sigma_v, b.sigma_h, b.rho_fit1, b.rho_fit2)
    paper = pg.PrivateGLM(_info(kappa=1e3), np.random.default_rng(0), epsilon=3.0,
                          delta=DELTA, accounting="paper")
    assert paper.const.kappa == 1e3  # paper mode does use the instance value


def _forced_run(accounting: str) -> tuple[pg.PrivateGLM, GLMInstance]:
    """Large κ (tiny Criterion-I threshold) and large κ* (c₂ = 1): both cutoffs are reached."""
    inst = GLMInstance("logistic", 2, 5, 1.0, 600, 3)
    info = dataclasses.replace(inst.info, kappa=2000.0, kappa_star=100.0,
                               kappa_pub=2000.0, kappa_star_pub=100.0)
    pol = pg.PrivateGLM(info, np.random.default_rng(0), epsilon=50.0, delta=DELTA,
                        accounting=accounting)
    pol.run(inst.environment(0))
    return pol, inst


@pytest.mark.parametrize("accounting", ["paper", "strict"])
def test_cutoffs_and_stopping(accounting: str) -> None:
    pol, inst = _forced_run(accounting)
    c, horizon = pol.const, inst.horizon
    assert (c.c1, c.c2) == (26, 1)
    assert pol.n1 == c.c1 and pol.stop1 and pol.discarded > 0
    assert pol.n2 == c.c2 and pol.stop2 and len(pol.switch_times) == c.c2
    ev = pol.events()
    assert np.sum(ev["fit_kind"] == 0) == c.c1 and np.sum(ev["fit_kind"] == 1) == c.c2
    assert pol.vtree.count == pol.htree.count == horizon
    warm = len(pol.warmup_times)
    assert warm == pol.n_w + pol.discarded
    if accounting == "paper":  # a fit after each Criterion-I sample; they also go to Z_nw
        assert pol.n_w == c.c1
        assert pol.n_nw == horizon - pol.discarded
    else:  # strict: Z_nw = [t] \ T_o; the k-th θ_w fit once the released count − E ≥ k
        assert pol.n_nw == horizon - warm
        assert np.linalg.norm(pol.theta_w) <= inst.S + 1e-12
        counts = ev["warmup_fit_counts"]
        assert np.all(counts - pol.count_margin >= np.arange(1, c.c1 + 1))
        assert pol.n_w >= c.c1 + pol.count_margin - 4 * pol.sigma_count * math.sqrt(
            pol.height)  # the released count is within a few noise sd of the true one


def test_paper_ledger_reports_claimed_and_actual() -> None:
    pol, _ = _forced_run("paper")
    eps, ledger = 50.0, pol.ledger
    assert ledger is not None
    by = {}
    for e in ledger.entries:
        by.setdefault(e.component, []).append(e)
    v = by["V-tree"][0]
    assert v.sensitivity == pytest.approx(math.sqrt(2)) and v.epsilon > eps / 3
    assert "claimed" in v.note
    fits = by["theta_w fits"] + by["theta_tau fits"]
    assert len(fits) == pol.n1 + pol.n2
    for e in fits:
        claimed = float(e.note.split("claimed (")[1].split(",")[0])
        assert e.epsilon > claimed  # σ/2 under replace-one
    spent, delta = ledger.spent()
    assert spent == math.inf  # Criterion I and κ, κ* react to one user's contexts
    assert any("joint DP does not hold" in b for b in ledger.breaches)
    assert ledger.claim is not None and ledger.claim[0] == eps
    d = pol.diagnostics()
    assert d["epsilon_claimed_worst"] == pytest.approx(4 * eps / 3)
    assert d["epsilon_actual"] == pytest.approx(pol._paper_actual_total()[0])
    assert f"{d['epsilon_actual']:.6g}" in ledger.claim[2]


def test_strict_ledger_never_exceeds_the_budget() -> None:
    """Randomised: ε ∈ [0.5, 10], T ∈ [100, 5000], d ∈ {2, 3, 5}, both families."""
    rng = np.random.default_rng(20240607)
    for case in range(6):
        eps = float(rng.uniform(0.5, 10.0))
        horizon = int(np.exp(rng.uniform(np.log(100), np.log(5000))))
        d = int(rng.choice([2, 3, 5]))
        family = ["probit", "logistic"][case % 2]
        S = float(rng.uniform(1.0, 4.0))
        inst = GLMInstance(family, d, 4, S, horizon, int(rng.integers(1 << 30)))
        pol = make_policy("Private-GLM", inst.info, np.random.default_rng(case), epsilon=eps,
                          delta=DELTA, accounting="strict")
        pol.run(inst.environment(0))  # calls ledger.check()
        ledger = pol.ledger
        assert ledger.rho_spent <= pol.rho_total * (1 + 1e-12)
        spent_eps, spent_delta = ledger.spent()
        assert spent_eps <= eps * (1 + 1e-12) and spent_delta <= DELTA
        c = pol.const
        worst = 2 * pol.rho_tree + c.c1 * pol.rho_fit1 + c.c2 * pol.rho_fit2
        assert worst <= pol.rho_total * (1 + 1e-12)
        assert epsilon_from_rho(worst, DELTA) <= eps * (1 + 1e-12)
        assert pol.n1 <= c.c1 and pol.n2 <= c.c2
        assert pol.vtree.count == pol.htree.count == horizon
        assert pol.n_nw == horizon - len(pol.warmup_times)


def test_no_warmup_at_the_tightest_paper_settings() -> None:
    """Table 2 S = 3, ε = 8 has the smallest 1/thr_w margin: Criterion I never fires."""
    inst = GLMInstance("probit", 3, 20, 3.0, 5000, 109832)
    pol = make_policy("Private-GLM", inst.info, np.random.default_rng(1), epsilon=8.0,
                      delta=DELTA, accounting="paper")
    result = pol.run(inst.environment(0))
    assert pol.n1 == 0 and len(pol.warmup_times) == 0
    assert 1 <= pol.n2 <= pol.const.c2
    assert result.regret.min() >= 0


def test_negligible_noise_matches_noiseless() -> None:
    inst = GLMInstance("probit", 3, 10, 2.0, 1200, 5)
    regrets = []
    for noiseless in (False, True):
        pol = pg.PrivateGLM(inst.info, np.random.default_rng(0), epsilon=1e6, delta=DELTA,
                            accounting="paper", noiseless=noiseless)
        regrets.append(pol.run(inst.environment(0)).regret.sum())
    assert regrets[0] == pytest.approx(regrets[1], rel=0.02)


@pytest.mark.parametrize("kwargs", [
    {"epsilon": 0.0}, {"epsilon": -2.0}, {"epsilon": None}, {"delta": 0.0}, {"delta": 1.0},
    {"delta": 1.5}, {"accounting": "loose"}, {"clip": -1.0}, {"surprise": 1},
    {"noiseless": True}, {"strict_burn_in": 12}, {"accountant_engine": "x"},
])
def test_bad_input_is_one_line(kwargs: dict) -> None:
    args = {"epsilon": 4.0, "delta": DELTA, **kwargs}
    with pytest.raises(ConfigError) as err:
        pg.PrivateGLM(_info(), np.random.default_rng(0), **args)
    assert "\n" not in str(err.value)


def _release_h(pol: pg.PrivateGLM, h: np.ndarray) -> None:
    """H_cur ← h through the policy's own update of a Criterion-I round (H leaf 0, H_cur's
    release with ab8fd16's running maximum of log det) on a noiseless H-tree holding h."""
    tree = MatrixTree(2, h.shape[0], 0.0, np.random.default_rng(0), eager=True)
    tree.update(h)
    pol.state.counts[rounds.WARM] = 1
    rounds.update_round(0, np.zeros(h.shape[0]), 0.0, pol.state, pol.constants, tree.state,
                        pol.trees[2])
    np.testing.assert_array_equal(pol.h_cur, h)


def _switch_due_policy(accounting: str, monkeypatch) -> tuple[pg.PrivateGLM, list[int]]:
    """A policy whose Criterion I fires on unit arms (large κ) with H_cur = 10·H_prev (a
    switch is due) and fits recorded instead of made."""
    info = dataclasses.replace(_info(S=1.0, family="logistic", d=2), kappa=2000.0,
                               kappa_pub=2000.0)
    pol = pg.PrivateGLM(info, np.random.default_rng(0), epsilon=50.0, delta=DELTA,
                        accounting=accounting, zeta=0.5)
    fits: list[int] = []
    monkeypatch.setattr(pol, "_fit", lambda t, kind: fits.append(t))
    _release_h(pol, 10.0 * pol.h_prev)
    return pol, fits


@pytest.mark.parametrize("accounting", ["paper", "strict"])
def test_criterion_two_is_checked_in_criterion_one_rounds_only_in_strict(accounting: str,
                                                                           monkeypatch) -> None:
    """Strict: a user's own contexts (Criterion I) cannot decide whether the check runs."""
    pol, fits = _switch_due_policy(accounting, monkeypatch)
    warm = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert pol.select(4, warm) == 0 and pol._warm  # Criterion I fired
    if accounting == "strict":
        assert pol.switch_times == fits == [4] and pol.n2 == 1
        np.testing.assert_array_equal(pol.h_prev, 10.0 * pol.const.lam * np.eye(2))
    else:
        assert pol.switch_times == fits == [] and pol.n2 == 0
        pol.update(4, warm[0], 1.0)  # Z_w's θ_w fit (recorded)
        _release_h(pol, 10.0 * pol.h_prev)
        pol.select(5, np.full((3, 2), 1e-3))  # a round without Criterion I: the check runs
        assert not pol._warm and pol.switch_times == [5] and 5 in fits


def test_strict_clips_contexts_paper_does_not() -> None:
    arms = np.array([[3.0, 4.0, 0.0], [0.1, 0.2, 0.2]])
    strict = pg.PrivateGLM(_info(), np.random.default_rng(0), epsilon=4.0, delta=DELTA)
    np.testing.assert_allclose(strict.prepare_arms(arms), [[0.6, 0.8, 0.0], [0.1, 0.2, 0.2]])
    paper = pg.PrivateGLM(_info(), np.random.default_rng(0), epsilon=4.0, delta=DELTA,
                          accounting="paper")
    assert paper.prepare_arms(arms) is arms


def test_warmup_count_margin_bounds_the_counter_noise() -> None:
    """Over many counters with no warm-up round, no released count exceeds the margin E
    more often than ζ; a margin of E/3 is exceeded (negative control)."""
    from dpbandits.privacy.tree import MatrixTree, tree_sigma_from_rho

    horizon, zeta = 64, 0.2
    sigma = tree_sigma_from_rho(0.05, horizon, 1.0)
    margin = pg.warmup_count_margin(sigma, horizon, zeta)
    rng = np.random.default_rng(3)
    exceed = exceed_third = 0
    runs = 400
    for _ in range(runs):
        tree = MatrixTree(horizon, 1, sigma, rng)
        peak = -math.inf
        for _ in range(horizon):
            tree.update(None)
            peak = max(peak, float(tree.query_raw()[0, 0]))
        exceed += peak >= margin
        exceed_third += peak >= margin / 3
    assert exceed / runs <= zeta
    assert exceed_third / runs > zeta


# ------------------------------------------------------------ code state ab8fd16 ------------


def _ab8(info: ProblemInfo | None = None, eps: float = 4.0, **kw) -> pg.PrivateGLM:
    return pg.PrivateGLM(info or _info(), np.random.default_rng(0), epsilon=eps, delta=DELTA,
                         accounting="paper", code_state="ab8fd16", **kw)


@pytest.mark.parametrize("inst, per_eps, expected", [
    (CONFIGS[0][0], TABLE2, {4: (3, 2), 6: (3, 3), 8: (3, 3)}),
    (CONFIGS[3][0], FIG1A, {1: (67, 2), 2: (67, 2), 4: (67, 2), 8: (67, 2)}),
    (CONFIGS[4][0], FIG1B, {1: (230, 2), 2: (230, 2), 4: (230, 2), 8: (230, 2)}),
])
def test_ab8fd16_cutoffs_lack_the_factor_three_and_the_floor(inst: tuple, per_eps: dict,
                                                             expected: dict) -> None:
    """c₂ = ⌊log₂(λ_max/λ_min + T/(κ*²λ_min d))⌋: the switch cap 2 of Figure 1 (its logs print
    "Count1 cutoff: 67, Count2 cutoff: 2" for (a)); d9c93e1's ⌊3·log₂(…)⌋ is 6–9 there."""
    d, horizon, S, kappa, kappa_star = inst
    for eps, (c1, c2) in expected.items():
        c = pg.private_glm_constants(d, horizon, S, 1.0, kappa, kappa_star, eps, DELTA, DELTA,
                                     "ab8fd16")
        assert (c.c1, c.c2) == (c1, c2)
        assert c.c2 < per_eps[eps][3]
    tiny = pg.private_glm_constants(2, 20, 0.5, 1.0, 1.2, 4.0, 8.0, DELTA, DELTA, "ab8fd16")
    assert tiny.c1 == 0  # no floor at 1 (d9c93e1 has max(1, ·))


def test_ab8fd16_trees_sum_the_initial_commits_node_set() -> None:
    from dpbandits.privacy.tree import ab8fd16_nodes, cover_nodes

    pol, ref = _ab8(), pg.PrivateGLM(_info(), np.random.default_rng(0), epsilon=4.0,
                                     delta=DELTA, accounting="paper")
    arms = np.random.default_rng(1).uniform(-0.5, 0.5, size=(20, 3))
    for t in range(13):
        for p in (pol, ref):
            p.update(t, arms[p.select(t, arms)], 1.0)
    for tree in (pol.vtree, pol.htree):  # leaf 13 is node 8204 (h = 14); by hand:
        assert tree.cover() == ab8fd16_nodes(13, tree.height) == [
            8203, 4101, 511, 255, 127, 63, 31, 15, 7, 3, 1, 8204]
    assert ref.htree.cover() == cover_nodes(13, ref.htree.height)
    assert np.array_equal(pol.htree.node_noise(1), ref.htree.node_noise(1))  # same draws


COLD = np.full((4, 3), 1e-3)  # arms far below the Criterion-I threshold


def _with_h(pol: pg.PrivateGLM, h: np.ndarray, monkeypatch) -> list[int]:
    """Release `h` as H_cur once; return the rounds at which θ_τ is refitted in round 7."""
    fits: list[int] = []
    monkeypatch.setattr(pol, "_fit", lambda t, kind: fits.append(t))
    _release_h(pol, h)
    pol.select(7, COLD)
    return fits


@pytest.mark.parametrize("scale, ab8fd16_switches, d9c93e1_switches", [
    ((2.1, 1.0, 1.0), True, True),     # det ratio 2.1, largest generalised eigenvalue 2.1
    ((1.3, 1.3, 1.3), True, False),    # det ratio 2.197 ≥ 2, eigenvalue 1.3 < f_sw = 1.41
    ((1.9, 1.0, 1.0), False, True),    # det ratio 1.9 < 2, eigenvalue 1.9 > f_sw
])
def test_ab8fd16_criterion_two_compares_determinants(scale: tuple, ab8fd16_switches: bool,
                                                     d9c93e1_switches: bool,
                                                     monkeypatch) -> None:
    for state, switches in (("ab8fd16", ab8fd16_switches), ("d9c93e1", d9c93e1_switches)):
        pol = pg.PrivateGLM(_info(), np.random.default_rng(0), epsilon=4.0, delta=DELTA,
                            accounting="paper", code_state=state)
        h = np.diag(scale) * pol.const.lam
        assert _with_h(pol, h, monkeypatch) == ([7] if switches else []), state


def test_ab8fd16_criterion_two_uses_running_maxima(monkeypatch) -> None:
    """A det of 2.1·λ³ released once and followed by λ³ still triggers the next check; after
    the switch H_prev's det enters the running maximum of the previous side."""
    pol = _ab8()
    lam = pol.const.lam
    fits: list[int] = []
    monkeypatch.setattr(pol, "_fit", lambda t, kind: fits.append(t))
    for h in (np.diag([2.1, 1.0, 1.0]) * lam, lam * np.eye(3)):
        _release_h(pol, h)
    pol.select(3, COLD)
    assert fits == [3] and np.array_equal(pol.h_prev, lam * np.eye(3))
    assert pol.logdet_prev == pytest.approx(3 * math.log(lam))  # max(λ³, det H_prev = λ³)
    pol.select(4, COLD)  # the running maximum 2.1λ³ is still ≥ 2·λ³: a second switch
    assert fits == [3, 4]
    pol.select(5, COLD)  # the cap c₂ = 2 (Table 2, ε = 4) is reached
    assert pol.stop2 and fits == [3, 4]


def test_ab8fd16_fits_run_fifty_epochs_on_their_own_stream() -> None:
    """Figure 1(b) at ε = 8, trial 0: first switch at round 513 with n = 513 (ab8fd16's logs:
    "σ = 18.9039 … steps=50, q=1.0"), fits of 50 epochs from a child stream of the policy's
    generator; the trees' noise is the same as without the fits' stream."""
    inst = GLMInstance("probit", 5, 20, 3.0, 5000, 109832)
    pol = pg.PrivateGLM(inst.info, np.random.default_rng(4), epsilon=8.0, delta=DELTA,
                        accounting="paper", code_state="ab8fd16")
    pol.run(inst.environment(0))
    ev = pol.events()
    assert pol.n1 == 0 and 1 <= pol.n2 <= pol.const.c2 == 2
    assert ev["fit_epochs"].tolist() == [50] * pol.n2
    assert ev["fit_sigma"][0] == pytest.approx(18.9039, abs=5e-5)
    assert ev["fit_n"][0] == ev["fit_round"][0]
    ref = pg.PrivateGLM(inst.info, np.random.default_rng(4), epsilon=8.0, delta=DELTA,
                        accounting="paper")
    assert np.array_equal(pol.vtree._noise_table, ref.vtree._noise_table)


def test_ab8fd16_ledger_states_the_tree_bug_at_its_exact_cost(monkeypatch) -> None:
    """Trees: ε at ρ = c_T·Δ²/(2σ²) with c_T = 16.25 (T = 5000) against the h = 14 of the
    dyadic argument; the V-tree's claimed ε/3 does not hold, the H-tree's does; fits at their
    actual replace-one cost; the Criterion-I and κ breaches and the claim as in d9c93e1."""
    from dpbandits.privacy import dpsgd_ab8fd16
    from dpbandits.privacy.tree import release_cost

    eps = 4.0
    pol = _ab8(_info(S=3.0, d=5, kappa=193.18, kappa_star=2.50663), eps=eps)
    ref = pg.PrivateGLM(_info(S=3.0, d=5, kappa=193.18, kappa_star=2.50663),
                        np.random.default_rng(0), epsilon=eps, delta=DELTA, accounting="paper")
    cost = release_cost(5000, "ab8fd16")[0]
    assert cost == pytest.approx(16.250026, rel=1e-6) and cost > pol.height == 14
    trees = {e.component: e for e in pol.ledger.entries if "tree" in e.mechanism}
    ref_trees = {e.component: e for e in ref.ledger.entries if "tree" in e.mechanism}
    for comp, sens, sigma in (("V-tree", pol.sens_v, pol.sigma_v),
                              ("H-tree", pol.sens_h, pol.sigma_h)):
        entry = trees[comp]
        assert "ab8fd16 node set" in entry.mechanism
        assert entry.epsilon == pytest.approx(
            epsilon_from_rho(cost * sens**2 / (2 * sigma**2), DELTA / 3), rel=1e-12)
        assert entry.epsilon > ref_trees[comp].epsilon  # the wrong node set costs more
        assert "root's partial sum" in entry.note and "16.25" in entry.note
    assert trees["V-tree"].epsilon > eps / 3 > trees["H-tree"].epsilon
    assert len(pol.ledger.breaches) == 2
    inst = GLMInstance("probit", 5, 20, 3.0, 1200, 109832)
    run = pg.PrivateGLM(inst.info, np.random.default_rng(0), epsilon=8.0, delta=DELTA,
                        accounting="paper", code_state="ab8fd16")
    run.run(inst.environment(0))
    fits = [e for e in run.ledger.entries if e.mechanism.startswith("DP-SGD, ab8fd16")]
    assert len(fits) == run.n2 >= 1
    for entry, (_, _, fit, actual) in zip(fits, run.fits, strict=True):
        assert entry.epsilon == actual == dpsgd_ab8fd16.replace_one_epsilon(fit)
        assert entry.epsilon > fit.epsilon
    assert math.isinf(run.ledger.spent()[0]) and run.ledger.claim[0] == 8.0
    assert run.diagnostics()["tree_release_cost"] == pytest.approx(
        release_cost(1200, "ab8fd16")[0])


def test_ab8fd16_is_refused_with_strict_accounting_in_one_line() -> None:
    with pytest.raises(ConfigError) as err:
        pg.PrivateGLM(_info(), np.random.default_rng(0), epsilon=4.0, delta=DELTA,
                      accounting="strict", code_state="ab8fd16")
    assert str(err.value) == (
        "Private-GLM: code_state = 'ab8fd16' is not allowed with accounting = strict; allowed "
        "only with accounting = paper (strict allows code_state = 'd9c93e1')")
    with pytest.raises(ConfigError, match="code_state = 'e4f1' is not allowed"):
        pg.PrivateGLM(_info(), np.random.default_rng(0), epsilon=4.0, delta=DELTA,
                      accounting="paper", code_state="e4f1")


def test_ab8fd16_zero_cutoff_fails_at_the_fit_in_one_line(monkeypatch) -> None:
    pol = _ab8(_info(S=0.5, d=2, horizon=20, kappa=1.2, kappa_star=4.0), eps=8.0)
    assert pol.const.c1 == 0
    with pytest.raises(ConfigError, match="count1_cutoff = 0") as err:
        pol._fit(0, 0)
    assert "\n" not in str(err.value)


# ------------------------------------------------------------ table rounds and select/update --

MODES = {
    "paper": {"accounting": "paper"},
    "strict": {"accounting": "strict"},
    "ab8fd16": {"accounting": "paper", "code_state": "ab8fd16"},
}


def _busy(mode: str, d: int, family: str, kappa_star: float = 2.0
          ) -> tuple[pg.PrivateGLM, GLMInstance]:
    """Large κ (Criterion I fires often), κ* = 2 (ab8fd16's c₂ = 2 ≥ 1), a generous ε."""
    inst = GLMInstance(family, d, 5, 1.0, 400, 3)
    info = dataclasses.replace(inst.info, kappa=2000.0, kappa_star=kappa_star,
                               kappa_pub=2000.0, kappa_star_pub=kappa_star)
    return pg.PrivateGLM(info, np.random.default_rng(7), epsilon=50.0, delta=DELTA,
                         **MODES[mode]), inst


def _final(pol: pg.PrivateGLM) -> dict:
    state = {name: value.tobytes() for name, value in pol.state._asdict().items()
             if name not in ("norms", "scores", "leaf", "work", "cell")}
    for name in ("zw_x", "zw_y"):
        state[name] = getattr(pol.state, name)[: pol.n_w].tobytes()
    for name in ("znw_x", "znw_y"):
        state[name] = getattr(pol.state, name)[: pol.n_nw].tobytes()
    state["warmup_times"] = pol.warmup_times
    state["ledger"] = pol.ledger.to_json()
    return state


def _both_paths(mode: str, d: int, family: str, kappa_star: float = 2.0) -> pg.PrivateGLM:
    """`play_table` (through the runner, on outcome tables) and `select`/`update` round by
    round give the same trace, events, diagnostics and final state: the table run's policy."""
    pol, inst = _busy(mode, d, family, kappa_star)
    table = pol.run(inst.environment(0))
    other, _ = _busy(mode, d, family, kappa_star)
    env = inst.environment(0)
    other.begin(env)
    regret, reward, actions = runner._select_update_loop(other, env)
    other.finish()
    np.testing.assert_array_equal(table.regret, regret)
    np.testing.assert_array_equal(table.reward, reward)
    np.testing.assert_array_equal(table.actions, actions)
    events = other.events()
    assert table.events.keys() == events.keys()
    for key, value in events.items():
        np.testing.assert_array_equal(table.events[key], value)
    assert table.diagnostics == {**other.diagnostics(), **env.reference_rewards(regret)}
    assert _final(pol) == _final(other)
    return pol


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("family, d", [("logistic", 2), ("probit", 3), ("logistic", 5)])
def test_table_rounds_and_select_update_give_the_same_run(mode: str, family: str,
                                                          d: int) -> None:
    """On runs with Criterion-I rounds, θ_w fits and (paper) discarded samples."""
    pol = _both_paths(mode, d, family)
    assert pol.warmup_times and pol.n1 >= 1
    if mode == "paper":
        assert pol.stop1 and pol.discarded


@pytest.mark.parametrize("mode, switches", [("paper", 2), ("strict", 2), ("ab8fd16", 1)])
def test_switches_are_the_same_on_both_paths(mode: str, switches: int) -> None:
    """κ* = 5, d = 1: Criterion II switches (and θ_τ is refitted) within 400 rounds."""
    pol = _both_paths(mode, 1, "probit", kappa_star=5.0)
    assert pol.n2 == len(pol.switch_times) == switches


def test_the_table_path_is_taken() -> None:
    """Private-GLM plays outcome tables in `play_table` (the runner's table rounds)."""
    pol, inst = _busy("paper", 2, "logistic")
    played = []
    original = pol.play_table
    pol.play_table = lambda tables: played.append(1) or original(tables)  # type: ignore
    pol.run(inst.environment(0))
    assert played == [1]
    assert pg.PrivateGLM.decision_rule is rounds.ucb_arm
    assert pg.PrivateGLM.update_rule is rounds.update_round


def test_rounds_past_the_horizon_are_refused() -> None:
    pol, inst = _busy("strict", 2, "logistic")
    pol.run(inst.environment(0))
    arms = np.ascontiguousarray(inst.contexts[0])
    with pytest.raises(ValueError, match="exceeds horizon 400"):
        pol.select(400, arms)
    with pytest.raises(ValueError, match="exceeds horizon 400"):
        pol.update(400, arms[0], 1.0)
    fresh, _ = _busy("paper", 2, "logistic")
    tables = runner.outcome_tables(fresh, inst.environment(0))
    fresh.select(0, arms)
    fresh.update(0, arms[0], 1.0)
    with pytest.raises(ValueError, match="400 rounds exceed the horizon 400"):
        fresh.play_table(tables)
