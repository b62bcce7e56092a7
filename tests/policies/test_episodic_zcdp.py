"""zCDP-Episodic, RarelySwitching-zCDP, AdaC-OFUL-zCDP (docs/ts.md, their two sections)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits import runner
from dpbandits.instances.registry import build_instance
from dpbandits.policies import make_policy
from dpbandits.privacy.release import recording
from dpbandits.privacy.zcdp import rho_from_epsilon
from dpbandits.runner import plays_tables

from helpers import assert_snapped_calibration

DELTA = 1e-5
PRIVATE = {"epsilon": 1.0, "delta": DELTA}


def play(name: str, horizon: int, **params):
    """Step a policy through a pool trial; return it and the features it played."""
    inst = build_instance({"generator": "logistic_pool", "seed": 21, "horizon": horizon})
    env = inst.environment(0)
    pol = make_policy(name, inst.info, np.random.default_rng(0), **PRIVATE, **params)
    played, states = [], []
    for t in range(horizon):
        arms = env.arms(t)
        i = pol.select(t, arms)
        states.append(pol.theta_tilde.copy())
        played.append(arms[i])
        pol.update(t, arms[i], env.pull(t, i)[0])
    return pol, np.asarray(played), np.asarray(states)


def log_dets(played: np.ndarray, lam: float = 1.0) -> np.ndarray:
    """ln det A_t for t = 0..T (A_t uses the rounds before t)."""
    d = played.shape[1]
    a = lam * np.eye(d)
    out = [np.linalg.slogdet(a)[1]]
    for x in played:
        a += np.outer(x, x)
        out.append(np.linalg.slogdet(a)[1])
    return np.asarray(out)


# thresholds away from ln 2 and its multiples: unit-norm arms make det A_t − det A_τ hit 2
# exactly, where the test `>` is decided by rounding alone
@pytest.mark.parametrize("name, params, threshold", [
    ("zCDP-Episodic", {"c_trigger": 2.5}, math.log(2.5)),
    ("zCDP-Episodic", {"c_trigger": 4.5}, math.log(4.5)),
    ("RarelySwitching-zCDP", {"C": 1.5}, math.log(2.5)),
])
def test_switch_times_follow_the_log_det_rule(name: str, params: dict, threshold: float) -> None:
    pol, played, states = play(name, 600, **params)
    ld = log_dets(played)
    switches = pol.events()["switch"].tolist()
    tau, expected = 0, []
    for t in range(1, 600):
        if ld[t] - ld[tau] > threshold:
            expected.append(t)
            tau = t
    assert switches == expected and len(switches) > 5
    # the released estimate changes exactly at the switches
    changed = [t for t in range(1, 600) if not np.array_equal(states[t], states[t - 1])]
    assert changed == switches


def test_episodic_forgets_and_uses_episode_sensitivity() -> None:
    pol, played, _ = play("zCDP-Episodic", 400)
    switches = [0, *pol.events()["switch"].tolist()]
    rho = rho_from_epsilon(1.0, DELTA)
    sens = pol.events()["sensitivity"]
    assert len(sens) == len(switches) - 1 > 5
    for k in range(len(sens)):
        xs = played[switches[k]:switches[k + 1]]
        a_ep = np.eye(20) + xs.T @ xs
        delta_theta = 1.0 / np.linalg.eigvalsh(a_ep)[0]
        assert sens[k] == pytest.approx(delta_theta, rel=1e-9)
        assert_snapped_calibration(pol.sigmas[k], delta_theta / math.sqrt(2 * rho),
                                   1 / math.sqrt(2 * rho), 20)
    entries = pol.ledger.entries  # one per episode, each on that episode's rewards only
    assert len(entries) == len(sens)
    assert [e.partition for e in entries] == [f"episode {k + 1}" for k in range(len(sens))]
    # each prices the noise drawn: Δ'²/(2σ'²) ≤ ρ on the exact noise's grid
    assert all(e.rho <= rho and e.rho == pytest.approx(rho, rel=1e-5) for e in entries)
    assert [e.sensitivity for e in entries] == pytest.approx(sens.tolist())
    assert [e.noise_scale for e in entries] == [pol.noise.effective_sigma(s) for s in pol.sigmas]
    spent = pol.ledger.spent()[0]
    assert spent <= 1.0 and spent == pytest.approx(1.0, rel=1e-5)  # parallel: ρ, not k·ρ
    counts = pol.events()["release_rewards"]
    assert counts.tolist() == np.diff(switches).tolist()


def test_frozen_policy_and_adac_width() -> None:
    pol, played, states = play("AdaC-OFUL-zCDP", 300, alpha=0.5)
    switches = pol.events()["switch"].tolist()
    last = switches[-1]
    a_tau = np.eye(20) + played[:last].T @ played[:last]
    log_term = 2 * math.log(1 / 0.05)
    beta_oful = 0.5 * math.sqrt(log_term + 20 * math.log1p(last / 20)) + 1.0
    beta_priv = (pol.sigma * math.sqrt(len(switches)) * (math.sqrt(20) + math.sqrt(log_term))
                 / math.sqrt(np.linalg.eigvalsh(a_tau)[0]))
    assert pol.width_scale == pytest.approx(0.5 * (beta_oful + beta_priv), rel=1e-9)
    np.testing.assert_allclose(pol.factor_tau @ pol.factor_tau.T * np.tri(20), np.tril(a_tau),
                               atol=1e-9)


@pytest.mark.parametrize("name", ["zCDP-Episodic", "RarelySwitching-zCDP"])
def test_about_160_switches_at_paper_scale(name: str) -> None:
    inst = build_instance({"generator": "logistic_pool", "seed": 3, "horizon": 10_000})
    pol = make_policy(name, inst.info, np.random.default_rng(0), **PRIVATE)
    pol.run(inst.environment(0))
    n = pol.diagnostics()["n_switches"]
    assert 150 <= n <= 165
    assert pol.events()["release_rewards"].sum() <= 10_000
    spent = pol.ledger.spent()[0]
    assert spent <= 1.0 and spent == pytest.approx(1.0, rel=1e-5)  # parallel: total ρ
    assert sum(e.count for e in pol.ledger.entries) == n


@pytest.mark.parametrize("name", ["RarelySwitching-zCDP", "AdaC-OFUL-zCDP"])
def test_skipped_log_det_tests_change_no_bit(name: str) -> None:
    """The growth bound only skips log-det tests that cannot switch: the policy's table rounds
    (compiled, skipping) are bit for bit a run that tests every round, round by round."""
    inst = build_instance({"generator": "logistic_pool", "seed": 31, "horizon": 3000})
    cls = type(make_policy(name, inst.info, np.random.default_rng(0), **PRIVATE))

    class EveryRound(cls):  # type: ignore[misc, valid-type]
        def margin(self) -> float:
            return math.inf

    assert plays_tables(cls) and not plays_tables(EveryRound)
    out = []
    for kind in (cls, EveryRound):
        pol = kind(inst.info, np.random.default_rng(4), **PRIVATE)
        result = pol.run(inst.environment(0))
        out.append((result.regret.tobytes(), pol.ledger.to_json(),
                    pol.events()["switch"].tolist()))
    assert out[0] == out[1]
    assert len(out[0][2]) > 10


def _trace(name: str, spec: dict, tables: bool, accounting: str, **params) -> tuple:
    """A run by the table rounds or by select → pull → update: trace, ledger, events, and
    how many switches the Python `switch` made."""
    instance = build_instance(spec)
    env = instance.environment(0)
    pol = make_policy(name, instance.info, np.random.default_rng(2), accounting=accounting,
                      **PRIVATE, **params)
    pol.begin(env)
    made = []
    if hasattr(pol, "episode_estimate"):
        switch = pol.switch
        pol.switch = lambda t: (made.append(t), switch(t))  # type: ignore[method-assign]
    loop = runner._round_loop if tables else runner._select_update_loop
    regret, _, actions = loop(pol, env)
    pol.finish()
    events = {k: v.tobytes() for k, v in pol.events().items()}
    return (regret.tobytes(), actions.tolist(), pol.ledger.to_json(), events), len(made)


NOISY = {"generator": "glm_ball", "family": "linear", "d": 4, "K": 6, "S": 2.0, "seed": 3,
         "noise_sd": 3.0, "horizon": 1200}


@pytest.mark.parametrize("accounting", ["strict", "paper"])
@pytest.mark.parametrize("name, params", [
    ("zCDP-Episodic", {}), ("zCDP-Episodic", {"c_trigger": 1.0}),
    ("RarelySwitching-zCDP", {"C": 0.3}), ("AdaC-OFUL-zCDP", {"alpha": 0.5})])
def test_table_rounds_are_the_round_loops(accounting: str, name: str, params: dict) -> None:
    """Noisy linear rewards make every one-sample episode (c = 1) its own, far more than the
    episode memo holds: the compiled rounds and select → pull → update agree; the compiled
    rounds make the switches whose Δ_θ was calibrated last."""
    tables, python_switches = _trace(name, NOISY, True, accounting, **params)
    rounds, _ = _trace(name, NOISY, False, accounting, **params)
    assert tables == rounds
    if params.get("c_trigger") == 1.0:
        switches = len(np.frombuffer(tables[3]["switch"], dtype=np.int64))
        assert switches > 1000 and python_switches < switches


@pytest.mark.parametrize("accounting", ["strict", "paper"])
def test_one_sample_episodes_of_a_pool_switch_in_compiled_rounds(accounting: str) -> None:
    """c = 1 on a pool of arms: the episodes repeat, their estimates and σ are remembered, and
    nearly every switch is made in the compiled rounds (the rest by `switch`), as the round
    loop makes them."""
    spec = {"generator": "logistic_pool", "d": 5, "n_arms": 10, "K": 3, "seed": 4,
            "horizon": 3000}
    tables, python_switches = _trace("zCDP-Episodic", spec, True, accounting, c_trigger=1.0)
    assert tables == _trace("zCDP-Episodic", spec, False, accounting, c_trigger=1.0)[0]
    switches = len(np.frombuffer(tables[3]["switch"], dtype=np.int64))
    assert switches > 2900 and python_switches < switches / 20


def test_the_compiled_switches_are_released_through_the_release_function(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """c = 1 on a pool: every switch, nearly all made in the compiled rounds, is one call of
    `privacy.release.release` with the noise row the loop used, one ledger entry each; a
    release that differs from the estimate the loop acted on is refused (the control)."""
    from dpbandits.policies import episodic_zcdp

    calls: list[str] = []
    real = episodic_zcdp.release

    def spy(*args, **kwargs):
        calls.append(kwargs["partition"])
        return real(*args, **kwargs)

    monkeypatch.setattr(episodic_zcdp, "release", spy)
    spec = {"generator": "logistic_pool", "d": 5, "n_arms": 10, "K": 3, "seed": 4,
            "horizon": 1000}
    tables, python_switches = _trace("zCDP-Episodic", spec, True, "strict", c_trigger=1.0)
    switches = len(np.frombuffer(tables[3]["switch"], dtype=np.int64))
    assert python_switches < switches / 20
    assert calls == [f"episode {k + 1}" for k in range(switches)]
    with recording() as recorder:  # recorded: every switch by `switch`, the same run
        again, python_made = _trace("zCDP-Episodic", spec, True, "strict", c_trigger=1.0)
    assert again == tables and python_made == switches == len(recorder.records)
    off = episodic_zcdp.RowsNoise.release
    monkeypatch.setattr(episodic_zcdp.RowsNoise, "release",
                        lambda self, value, sigma: off(self, value, sigma) + 1e-9)
    with pytest.raises(RuntimeError, match="acted on another estimate than the one released"):
        _trace("zCDP-Episodic", spec, True, "strict", c_trigger=1.0)
