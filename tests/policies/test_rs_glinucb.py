"""RS-GLinUCB (docs/glm.md, "RS-GLinUCB")."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from glm_paths import GLM, assert_same_paths, play

import dpbandits.policies.rs_glinucb as rs_module
from dpbandits.contract import ProblemInfo
from dpbandits.errors import ConfigError
from dpbandits.glm import log_det_spd
from dpbandits.instances.glm import GLMInstance
from dpbandits.policies import get_policy_class, make_policy
from dpbandits.policies.rs_glinucb import rs_lambda_t2
from dpbandits.runner import run_policy


@pytest.fixture(scope="module")
def instance() -> GLMInstance:
    return GLMInstance("probit", 3, 20, 2.0, 1200, seed=109832)


@pytest.fixture(scope="module")
def figure_1b() -> GLMInstance:
    """The instance of the Private-GLM paper's Figure 1(b) (docs/glm.md, "Instance generator")."""
    return GLMInstance("probit", 5, 20, 3.0, 5000, seed=109832)


def run_checked(policy, env, horizon):
    """Play `horizon` rounds, recording (logdet H_cur, logdet H_prev) right before each switch."""
    checks = []
    original = policy._switch

    def spy(t):
        H_prev = policy.H_cur if policy.aliased else policy.H_prev
        checks.append((t, log_det_spd(policy.H_cur), log_det_spd(H_prev)))
        original(t)

    policy._switch = spy
    regret = []
    for t in range(horizon):
        a = policy.select(t, env.arms(t))
        r, reg = env.pull(t, a)
        regret.append(reg)
        policy.update(t, env.arms(t)[a], r)
    return np.array(regret), checks


def test_lambda_values() -> None:
    assert rs_lambda_t2(3, 5000, 0.02, 1.0) == pytest.approx(31.084899, abs=5e-7)
    assert rs_lambda_t2(5, 5000, 0.02, 1.0) == pytest.approx(51.808165, abs=5e-7)
    assert rs_lambda_t2(5, 15000, 0.02, 1.0) == pytest.approx(55.927961, abs=5e-7)
    info = ProblemInfo("probit", 3, 20, 5000, 2.0, kappa=18.3936699115)
    p = make_policy("RS-GLinUCB", info, np.random.default_rng(0), delta=0.02)
    assert p.lam == pytest.approx(31.084899, abs=5e-7)
    assert p.gamma == pytest.approx(12.2127, abs=5e-5)  # same γ, β as Alg. 2 (docs/glm.md)
    assert p.beta == pytest.approx(24.4254, abs=5e-5)
    assert p.thr_w == pytest.approx(0.453054, abs=5e-7)
    c = make_policy("RS-GLinUCB", info, np.random.default_rng(0), variant="C")
    assert (c.lam, c.c_dbl, c.lambda_fit, c.alias_bug) == (0.5, 0.5, 1e-5, True)


def test_ab8fd16_variant_is_the_initial_commits_code() -> None:
    """λ = 0.5, c = 0.5, H_prev aliased, det switch, λ_fit = 1e-3: the RS-GLinUCB of the
    Private-GLM authors' commit ab8fd16 (docs/glm.md, "RS-GLinUCB")."""
    info = ProblemInfo("probit", 5, 20, 5000, 3.0, kappa=193.1841005125)
    p = make_policy("RS-GLinUCB", info, np.random.default_rng(0), variant="ab8fd16")
    assert (p.lam, p.c_dbl, p.lambda_fit) == (0.5, 0.5, 1e-3)
    assert p.alias_bug and p.det_switch and p.h_divide_e and not p.exact_V_update
    assert p.thr_w == pytest.approx(0.0115031, abs=5e-8)
    c = make_policy("RS-GLinUCB", info, np.random.default_rng(0), variant="C")
    assert (c.lambda_fit, c.det_switch) == (1e-5, False)  # the later commit d9c93e1


def test_ab8fd16_warmup_rounds_are_the_authors(figure_1b: GLMInstance) -> None:
    """Criterion I reads only the contexts and V, so the warm-up rounds on the Figure 1(b)
    instance are those of the authors' code at the same λ: 477 rounds, the last at round 3091,
    in their ab8fd16 code (λ = 0.5); T2's λ = 51.81 gives 189."""
    warm = {}
    for variant in ("ab8fd16", "T2"):
        p = make_policy("RS-GLinUCB", figure_1b.info, np.random.default_rng(0),
                        variant=variant, solver="newton", delta=0.02)
        run_policy(p, figure_1b.environment(0))
        warm[variant] = p.events()["warmup_rounds"]
    assert len(warm["ab8fd16"]) == 477 and warm["ab8fd16"][-1] == 3091
    assert len(warm["T2"]) == 189


def test_t2_switch_rule_and_no_aliasing(instance: GLMInstance) -> None:
    p = make_policy("RS-GLinUCB", instance.info, np.random.default_rng(0), delta=0.02)
    regret, checks = run_checked(p, instance.environment(0), 1200)
    assert np.all(regret >= 0)
    assert len(checks) >= 2
    for _, cur, prev in checks:
        assert cur >= math.log(2.0) + prev
    assert p.H_prev is not p.H_cur and not np.shares_memory(p.H_prev, p.H_cur)
    assert not p.aliased
    # H_prev is the copy taken at the last switch; H_cur has grown since
    assert log_det_spd(p.H_cur) > log_det_spd(p.H_prev)
    events = p.events()
    np.testing.assert_array_equal(events["switch_times"], [t for t, _, _ in checks])
    assert p.diagnostics()["switches"] == len(checks)
    np.testing.assert_allclose(p.H_prev_inv, np.linalg.inv(p.H_prev), atol=1e-8)
    np.testing.assert_allclose(p.H_cur_inv, np.linalg.inv(p.H_cur), atol=1e-8)
    np.testing.assert_allclose(p.V_inv, np.linalg.inv(p.V), atol=1e-8)


@pytest.mark.parametrize("trial", [0, 1])
def test_variant_c_switches_exactly_once(instance: GLMInstance, trial: int) -> None:
    p = make_policy("RS-GLinUCB", instance.info, np.random.default_rng(trial), variant="C",
                    solver="newton")
    regret, checks = run_checked(p, instance.environment(trial), 1200)
    assert np.all(regret >= 0)
    assert len(checks) == 1 and p.aliased
    assert checks[0][1] >= math.log(1.5) + checks[0][2]
    warm = p.events()["warmup_rounds"]
    assert len(warm) > 0 and np.all(np.diff(warm) > 0)
    assert checks[0][0] not in set(warm.tolist())


def test_variant_c_without_alias_keeps_switching(instance: GLMInstance) -> None:
    p = make_policy("RS-GLinUCB", instance.info, np.random.default_rng(0), variant="C",
                    alias_bug=False, solver="newton")
    _, checks = run_checked(p, instance.environment(0), 1200)
    assert len(checks) > 1 and not p.aliased


def test_running_max_logdet_lets_aliased_runs_switch(instance: GLMInstance) -> None:
    p = make_policy("RS-GLinUCB", instance.info, np.random.default_rng(0), variant="C",
                    running_max_logdet=True, solver="newton")
    _, checks = run_checked(p, instance.environment(0), 1200)
    assert len(checks) > 1 and p.aliased


def test_warmup_v_update_quirk() -> None:
    info = ProblemInfo("probit", 2, 2, 10, 1.0, kappa=1e4)  # tiny threshold: warm-up round
    arms = np.array([[0.6, 0.0], [0.0, 0.8]])
    quirk = make_policy("RS-GLinUCB", info, np.random.default_rng(0))
    m = 0.64 / quirk.lam
    assert quirk.select(0, arms) == 1
    np.testing.assert_allclose(quirk.V[1, 1], quirk.lam + 0.64 / (1 + m), rtol=1e-14)
    exact = make_policy("RS-GLinUCB", info, np.random.default_rng(0), exact_V_update=True)
    assert exact.select(0, arms) == 1
    np.testing.assert_allclose(exact.V[1, 1], exact.lam + 0.64, rtol=1e-14)
    np.testing.assert_allclose(exact.V_inv, np.linalg.inv(exact.V), atol=1e-12)


def test_old_theta_kept_when_fit_fails(monkeypatch: pytest.MonkeyPatch,
                                       instance: GLMInstance) -> None:
    calls = []

    def failing(X, r, link, lam, theta0, **kwargs):
        calls.append(X.shape[0])
        kwargs["stats"].record(False)
        return np.full(X.shape[1], 99.0), False

    monkeypatch.setattr(rs_module, "compat_mle", failing)
    p = make_policy("RS-GLinUCB", instance.info, np.random.default_rng(0), variant="C")
    run_checked(p, instance.environment(0), 300)
    assert len(calls) == p.diagnostics()["fits"] > 1
    assert p.diagnostics()["solver_failures"] == len(calls)
    np.testing.assert_array_equal(p.theta_w, 0.0)
    np.testing.assert_array_equal(p.theta_tau, 0.0)


def test_fits_accepted_when_successful(instance: GLMInstance) -> None:
    p = make_policy("RS-GLinUCB", instance.info, np.random.default_rng(0), solver="newton")
    run_checked(p, instance.environment(0), 600)
    assert p.diagnostics()["solver_failures"] == 0 and p.diagnostics()["fits"] > 0
    assert np.linalg.norm(p.theta_tau) > 0.5


def test_sw_variant_switches_at_first_regular_round(instance: GLMInstance) -> None:
    p = make_policy("RS-GLinUCB", instance.info, np.random.default_rng(0), variant="SW")
    assert p.lambda_fit == pytest.approx(0.25) and p.exact_V_update and p.det_switch
    _, checks = run_checked(p, instance.environment(0), 300)
    warm = set(p.events()["warmup_rounds"].tolist())
    first_regular = min(set(range(300)) - warm)
    assert [t for t, _, _ in checks] == [first_regular]
    assert checks[0][2] == -math.inf  # H_prev started at 0


def test_paper_variant_settings(instance: GLMInstance) -> None:
    p = make_policy("RS-GLinUCB", instance.info, np.random.default_rng(0), variant="paper",
                    solver="newton")
    assert p.thr_w == pytest.approx(1 / (p.gamma**2 * instance.kappa))
    assert p.ucb_centre == "tau" and not p.tau_includes_warmup and p.strict_switch
    # with the paper's threshold this instance stays in warm-up; a looser one lets it leave
    q = make_policy("RS-GLinUCB", instance.info, np.random.default_rng(0), variant="paper",
                    solver="newton", warmup_threshold=0.015)
    regret, checks = run_checked(q, instance.environment(0), 400)
    assert np.all(regret >= 0)
    assert len(checks) >= 1
    for _, cur, prev in checks:
        assert cur >= math.log(2.0) + prev - 1e-12
    n_warm = len(q.events()["warmup_rounds"])
    assert 0 < n_warm < 400
    assert q.Z_tau.n == 400 - n_warm and q.Z_w.n == n_warm


def test_bad_parameters_rejected() -> None:
    info = ProblemInfo("probit", 3, 5, 10, 1.0)
    rng = np.random.default_rng(0)
    with pytest.raises(ConfigError, match="variant"):
        make_policy("RS-GLinUCB", info, rng, variant="T3")
    with pytest.raises(ConfigError, match="alias_bug"):
        make_policy("RS-GLinUCB", info, rng, alias_bug=1)
    with pytest.raises(ConfigError, match="lam"):
        make_policy("RS-GLinUCB", info, rng, lam=0.0)
    with pytest.raises(ConfigError, match="warmup_rule"):
        make_policy("RS-GLinUCB", info, rng, warmup_rule="theory")


CASES: list[dict[str, Any]] = [
    {},
    {"variant": "C"},
    {"variant": "SW"},
    {"variant": "paper"},
    {"variant": "ab8fd16"},
    {"variant": "C", "running_max_logdet": True},
    {"solver": "newton", "strict_switch": True, "ucb_centre": "tau"},
    {"h_prev_init_zero": True, "h_divide_e": False, "c_dbl": 0.1},
    {"variant": "paper", "warmup_threshold": 0.05, "solver": "newton"},
]


@pytest.mark.parametrize("family", ["logistic", "probit", "linear"])
@pytest.mark.parametrize("params", CASES, ids=lambda c: str(c))
def test_table_rounds_and_select_update_give_the_same_run(family: str,
                                                          params: dict[str, Any]) -> None:
    if family == "linear":  # its fits: Newton only
        params = {**params, "solver": "newton"}
    for trial in (0, 1):
        assert_same_paths("RS-GLinUCB", params, {**GLM, "family": family, "horizon": 400}, trial)


@pytest.mark.parametrize("params", [{}, {"variant": "C"}], ids=["T2", "C"])
@pytest.mark.parametrize("spec", [{**GLM, "d": 12, "K": 3, "S": 4.0},  # every round warms up
                                  {**GLM, "d": 1, "K": 1}, {**GLM, "d": 1, "K": 5}],
                         ids=["warm", "d1K1", "d1"])
def test_table_rounds_at_the_edges(params: dict[str, Any], spec: dict[str, Any]) -> None:
    assert_same_paths("RS-GLinUCB", params, {**spec, "horizon": 300})


def test_table_rounds_leave_only_warm_ups_and_switches_to_select(monkeypatch) -> None:
    """The compiled rounds play every round that neither warms up nor switches; `select`
    plays exactly those that do."""
    cls = get_policy_class("RS-GLinUCB")
    selected: list[int] = []
    select = cls.select
    monkeypatch.setattr(cls, "select", lambda self, t, arms: selected.append(t) or select(
        self, t, arms))
    run = play("RS-GLinUCB", {"variant": "C"}, {**GLM, "horizon": 600}, True)
    events = {name: np.frombuffer(value[3], dtype=np.int64).tolist()
              for name, value in ((k.strip("'"), v) for k, v in run["events"])}
    assert events["warmup_rounds"] and events["switch_times"]
    assert selected == sorted(events["warmup_rounds"] + events["switch_times"])
