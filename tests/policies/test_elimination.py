"""Batched elimination policies (Hanna et al., Algorithms 1–3; docs/linear.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpbandits.design import compute_design
from dpbandits.errors import ConfigError, PrivacyBudgetError
from dpbandits.instances.registry import build_instance
from dpbandits.policies import elimination, make_policy
from dpbandits.policies.elimination import (
    EliminationConfig,
    _Batcher,
    batch_counts,
    batch_schedule,
    eliminate,
    leader,
    run_elimination,
    run_ls_elimination,
)
from dpbandits.privacy.amplification import closed_form_epsilon, closed_form_inverse
from dpbandits.privacy.exact_noise import ExactNoise
from dpbandits.privacy.ledger import LedgerEntry
from dpbandits.privacy.shuffler import Shuffler, per_action_sums

from helpers import assert_snapped_calibration

NAMES = {
    "nonprivate": "PhasedElimination",
    "central": "CentralDPElimination",
    "local": "LocalDPElimination",
    "shuffled": "ShuffleDPElimination",
}


def instance(horizon: int, seed: int = 5, redraw: bool = False):
    return build_instance(
        {
            "generator": "linear_sphere",
            "K": 10,
            "d": 2,
            "horizon": horizon,
            "seed": seed,
            "redraw": redraw,
        }
    )


def run(mode: str, env, eps: float | None = 1.0, rng_seed: int = 0, **params):
    private = mode != "nonprivate"
    policy = make_policy(
        NAMES[mode],
        env.info,
        np.random.default_rng(rng_seed),
        epsilon=eps if private else None,
        delta=1e-6 if private else None,
        accounting=params.pop("accounting", "paper"),
        **params,
    )
    return policy, policy.run(env)


def test_schedule() -> None:
    q, m = batch_schedule(10**6)
    assert q == pytest.approx(2.8581417, abs=1e-7) and m == 12
    for horizon in (10, 500, 20_000, 10**6, 10**8):
        q, _ = batch_schedule(horizon)
        assert math.e <= q <= math.e**2
        assert q ** math.log(horizon) == pytest.approx(2 * horizon, rel=1e-9)
    with pytest.raises(ConfigError):
        batch_schedule(0)


def test_counts_dominate_the_design() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        points = rng.standard_normal((10, 3))
        points /= np.linalg.norm(points, axis=1, keepdims=True)
        design = compute_design(points)
        x = points @ design.basis.T
        for q_i in (2.86, 66.7, 12727.8):
            counts = batch_counts(design.weights, q_i, 10**9)
            assert np.all(counts >= design.weights * q_i)
            assert np.all((counts > 0) == (design.weights > 0))
            v_i = (x * counts[:, None]).T @ x
            v_pi = (x * design.weights[:, None]).T @ x
            assert np.linalg.eigvalsh(v_i - q_i * v_pi).min() >= -1e-9


def test_truncation_to_the_horizon() -> None:
    counts = batch_counts(np.array([0.5, 0.0, 0.25, 0.25]), 100.0, 60)
    assert counts.tolist() == [50, 0, 10, 0]


@pytest.mark.parametrize("mode", list(NAMES))
@pytest.mark.parametrize("horizon", [1, 2, 7, 500, 20_000])
def test_every_round_is_played_once(mode: str, horizon: int) -> None:
    env = instance(horizon).environment(0)
    policy, result = run(mode, env)
    assert result.regret.shape == (horizon,) and result.reward.shape == (horizon,)
    assert result.regret.dtype == np.float64
    assert np.all(result.regret >= 0) and np.all(result.regret <= env.gaps.max())
    events = policy.events()
    assert (
        events["batch_size"].sum()
        + max(0, horizon - events["batch_start"][-1] - events["batch_size"][-1])
        == horizon
    )


def test_regret_is_the_pull_count_sum() -> None:
    env = instance(10**5).environment(1)
    policy, result = run("central", env)
    ev, diag = policy.events(), policy.diagnostics()
    total = result.regret.sum()
    assert 0 <= total <= 10**5 * env.gaps.max()
    exploit = 10**5 - int(diag["exploit_start"])
    assert exploit == 10**5 - ev["batch_start"][-1] - ev["batch_size"][-1]
    assert result.regret[-exploit:].sum() == pytest.approx(exploit * diag["exploit_gap"])


def noise_sums(mode: str, counts: np.ndarray, explicit: bool, reps: int, eps: float = 0.8):
    """Privacy noise of per-action sums with σ = 0 rewards (so only the noise remains)."""
    cfg = EliminationConfig(
        mode=mode, horizon=10**6, d=2, sigma=1.0, epsilon=eps, delta=1e-6, explicit=explicit
    )
    means = np.array([0.3, -0.2])
    n_i = int(counts.sum())
    scale = 1.0 / eps  # Δ = 1: one Laplace per core sum (central)
    if mode in ("local", "shuffled"):
        eps0 = eps if mode == "local" else closed_form_inverse(eps, n_i, 1e-6)
        scale = 1.0 / eps0
    out = []
    batcher = _Batcher(cfg, means, 0.0, np.random.default_rng(1), np.random.default_rng(2))
    for _ in range(reps):
        _, _, _, noisy = batcher.play(np.array([0, 1]), counts, scale)
        out.append(noisy - counts * means)
    return np.array(out), scale


def test_central_noise_is_one_laplace_per_action() -> None:
    z, _ = noise_sums("central", np.array([30, 70]), False, 20_000)
    b = 1 / 0.8
    for col in z.T:
        assert stats.kstest(col, stats.laplace(scale=b).cdf).pvalue > 0.01
    explicit, _ = noise_sums("central", np.array([30, 70]), True, 5000)
    assert stats.ks_2samp(z[:, 0], explicit[:, 0]).pvalue > 0.01


@pytest.mark.parametrize("mode", ["local", "shuffled"])
def test_per_report_noise_matches_calibration(mode: str) -> None:
    """Σ of n per-report Laplace(Δ/ε0): variance 2nb² (5 s.e.), fast ≡ explicit (KS)."""
    counts = np.array([400, 600])
    z, b = noise_sums(mode, counts, False, 10_000)
    if mode == "shuffled":
        assert 1 / b == pytest.approx(closed_form_inverse(0.8, 1000, 1e-6))
        assert 1 / b > 0.8
    for col, n in zip(z.T, counts, strict=True):
        var = 2 * n * b**2
        se = var * math.sqrt((2 + 3 / n) / col.size)
        assert abs(np.mean(col**2) - var) < 5 * se
    explicit, _ = noise_sums(mode, counts, True, 2000)
    assert stats.ks_2samp(z[:, 1], explicit[:, 1]).pvalue > 0.01


def test_shuffler_keeps_per_action_sums() -> None:
    rng = np.random.default_rng(4)
    shuffler = Shuffler(rng)
    counts = np.array([3, 0, 5, 2])
    clients = shuffler.assign(counts)
    assert np.bincount(clients, minlength=4).tolist() == counts.tolist()
    reports = rng.standard_normal(clients.size)
    got_a, got_r = shuffler.collect(clients, reports)
    assert not np.array_equal(got_a, clients) or clients.size < 3
    np.testing.assert_allclose(
        per_action_sums(got_a, got_r, 4), per_action_sums(clients, reports, 4)
    )


@pytest.mark.parametrize("mode", ["central", "local", "shuffled"])
def test_huge_epsilon_reproduces_non_private(mode: str) -> None:
    """ε = 10¹² and the same reward stream: the private trajectory equals the non-private one."""
    for trial in range(5):
        env = instance(10**5, redraw=True).environment(trial)
        _, base = run("nonprivate", env)
        _, private = run(mode, env, eps=1e12)
        assert private.regret.sum() == pytest.approx(base.regret.sum(), rel=1e-12)


def test_shuffled_equals_local_without_amplification() -> None:
    """ε = 20 is above every batch's amplification threshold, so Alg. 3 = Alg. 2."""
    for trial in range(5):
        env = instance(10**5, redraw=True).environment(trial)
        _, local = run("local", env, eps=20.0, rng_seed=trial)
        policy, shuffled = run("shuffled", env, eps=20.0, rng_seed=trial)
        np.testing.assert_array_equal(local.regret, shuffled.regret)
        np.testing.assert_array_equal(policy.events()["local_epsilon"], 20.0)


@pytest.mark.parametrize("mode", list(NAMES))
def test_best_action_never_eliminated(mode: str) -> None:
    inst = instance(10**5, seed=9, redraw=True)
    for trial in range(60):
        policy, _ = run(mode, inst.environment(trial), eps=0.5, rng_seed=trial)
        assert policy.diagnostics()["best_eliminated"] == 0.0


@pytest.mark.parametrize("mode", ["central", "local", "shuffled"])
def test_fast_path_matches_explicit_path(mode: str) -> None:
    """Mean regrets at T = 2·10⁴ agree within 4 standard errors of their difference."""
    inst = instance(20_000, seed=2)
    fast, explicit = [], []
    for trial in range(100):
        env = inst.environment(trial)
        fast.append(run(mode, env, eps=0.5, rng_seed=trial)[1].regret.sum())
        explicit.append(run(mode, env, eps=0.5, rng_seed=trial, path="explicit")[1].regret.sum())
    fast, explicit = np.array(fast), np.array(explicit)
    se = math.sqrt(fast.var(ddof=1) / fast.size + explicit.var(ddof=1) / explicit.size)
    assert abs(fast.mean() - explicit.mean()) < 4 * se


def test_rewards_are_realised_and_exploit_rewards_unused() -> None:
    """Realised rewards sum to the means plus noise; estimators never see exploit rewards."""
    env = instance(20_000).environment(0)
    _, fast = run("nonprivate", env)
    _, explicit = run("nonprivate", env, path="explicit")
    for result in (fast, explicit):
        expected = 20_000 * env.means.max() - result.regret.sum()
        assert abs(result.reward.sum() - expected) < 5 * math.sqrt(20_000)
    cfg = EliminationConfig(mode="nonprivate", horizon=20_000, d=2, sigma=1.0, explicit=True)
    trace = run_elimination(
        env.actions, env.means, 1.0, cfg, env.noise_rng(), np.random.default_rng(0)
    )
    batcher = _Batcher(cfg, env.means, 1.0, np.random.default_rng(3), np.random.default_rng(4))
    played, lengths, realised, sums = batcher.play(np.array([1, 4]), np.array([7, 9]), None)
    assert sums.sum() == pytest.approx(realised.sum())
    assert (played == 1).sum() == 7 and (played == 4).sum() == 9
    assert np.all(lengths == 1)
    assert trace.exploit_start == sum(trace.batch_size)


def test_eliminate_is_least_squares_and_the_leaders_band() -> None:
    """θ̂ from the per-action sums against numpy's least squares on the repeated rows, and the
    arms kept: those within 2γ of the largest estimate."""
    rng = np.random.default_rng(6)
    for _ in range(50):
        x = rng.standard_normal((8, 3))
        core = np.sort(rng.choice(8, size=4, replace=False))
        counts = rng.integers(1, 50, size=4)
        sums = rng.standard_normal(4) * counts
        width = float(rng.uniform(0.0, 0.5))
        keep, estimate = eliminate(x, x[core], counts, sums, width)
        rows = np.repeat(x[core], counts, axis=0)
        rewards = np.concatenate([np.full(n, s / n) for n, s in zip(counts, sums, strict=True)])
        theta = np.linalg.lstsq(rows, rewards, rcond=None)[0]
        np.testing.assert_allclose(estimate, x @ theta, rtol=1e-9, atol=1e-9)
        assert keep.tolist() == (estimate.max() - estimate <= 2 * width).tolist()
        assert keep[leader(estimate)] and leader(estimate) == int(np.argmax(estimate))


@pytest.mark.parametrize("schedule", ["batched", "ls"])
def test_the_exploit_phase_commits_to_the_leader(monkeypatch: pytest.MonkeyPatch,
                                                 schedule: str) -> None:
    """A leader taken as the last active arm decides both the band kept and the arm committed
    to; the true leader gives another run (the decision is the leader's)."""
    runner = run_ls_elimination if schedule == "ls" else run_elimination
    cfg = EliminationConfig(mode="nonprivate", horizon=10**5, d=2, sigma=1.0)
    changed = 0
    for trial in range(20):
        env = instance(10**5, seed=9, redraw=True).environment(trial)
        trace = runner(env.actions, env.means, 1.0, cfg, env.noise_rng(),
                       np.random.default_rng(0))
        with monkeypatch.context() as patch:
            patch.setattr(elimination, "leader", lambda estimate: len(estimate) - 1)
            last = runner(env.actions, env.means, 1.0, cfg, env.noise_rng(),
                          np.random.default_rng(0))
        if last.exploit_action >= 0:
            assert last.exploit_action == last.final_active[-1]
        changed += (last.final_active.tolist() != trace.final_active.tolist()
                    or last.exploit_action != trace.exploit_action)
    assert changed > 5


def snapped(entry: LedgerEntry) -> float:
    """Δ' = Δ + γ: the sensitivity of one snapped coordinate on the grid of the scale drawn."""
    return entry.sensitivity + ExactNoise(np.random.default_rng(0)).grid(entry.noise_scale)


def test_ledgers() -> None:
    """One entry per batch, on that batch's rewards; the total is composed from the entries."""
    env = instance(10**5).environment(0)
    for mode, eps in (("central", 0.5), ("local", 2.0)):
        policy, _ = run(mode, env, eps=eps, accounting="strict")
        entries = policy.ledger.entries
        assert len(entries) == len(policy.events()["batch_size"])
        assert [e.partition for e in entries] == [f"batch {i}" for i in
                                                  range(1, len(entries) + 1)]
        # the declared Δ = 2; ε = Δ'/b with Δ' = Δ + γ, the snapped sum's sensitivity
        assert all(e.sensitivity == 2.0 for e in entries)
        assert all(e.epsilon == snapped(e) / e.noise_scale for e in entries)
        assert policy.ledger.spent() == pytest.approx((eps, 0.0))
    policy, _ = run("shuffled", env, eps=0.5)
    eps_spent, delta_spent = policy.ledger.spent()
    assert eps_spent == math.inf  # paper mode: unclipped rewards have no bounded sensitivity
    assert "not clipped" in policy.ledger.breaches[0]
    policy, _ = run("shuffled", env, eps=0.5, accounting="strict")
    eps_spent, delta_spent = policy.ledger.spent()
    assert eps_spent <= 0.5 + 1e-9 and delta_spent == 1e-6
    for entry, n_i, eps0 in zip(
        policy.ledger.entries,
        policy.events()["batch_size"],
        policy.events()["local_epsilon"],
        strict=True,
    ):
        # Δ = 2B for rewards in [-1, 1], snapped: the scale is 2/ε0 raised by the grid only
        assert_snapped_calibration(entry.noise_scale, 2.0 / eps0, 1.0 / eps0, 1)
        actual_eps0 = snapped(entry) / entry.noise_scale
        assert actual_eps0 <= eps0
        assert entry.epsilon == pytest.approx(closed_form_epsilon(actual_eps0, int(n_i), 1e-6))


def test_ledger_composes_what_was_released() -> None:
    """A batch whose noise is smaller than calibrated shows up as an overspend."""
    env = instance(10**5).environment(0)
    policy, _ = run("central", env, eps=0.5, accounting="strict")
    policy.ledger.entries[2].epsilon *= 2.0  # as if batch 3 had half the noise
    with pytest.raises(PrivacyBudgetError):
        policy.ledger.check()


def test_strict_accounting_clips_with_doubled_sensitivity() -> None:
    env = instance(5000).environment(0)
    policy, _ = run("central", env, eps=1.0, accounting="strict")
    assert policy.config.clip == 1.0 and policy.config.sensitivity == 2.0
    assert policy.config.explicit
    assert_snapped_calibration(policy.ledger.entries[0].noise_scale, 2.0, 1.0, 1)
    with pytest.raises(ConfigError):
        run("local", env, eps=1.0, accounting="strict", sensitivity=1.0)


@pytest.mark.parametrize(
    "mode,eps,delta,params",
    [
        ("central", 0.0, 1e-6, {}),
        ("central", -1.0, 1e-6, {}),
        ("local", 1.0, 0.0, {}),
        ("shuffled", 1.0, 1.0, {}),
        ("shuffled", 1.0, 1e-6, {"amplification": "magic"}),
        ("central", 1.0, 1e-6, {"sensitivity": -1.0}),
        ("nonprivate", None, None, {"path": "slow"}),
        ("nonprivate", None, None, {"tol": 2.0}),
        ("nonprivate", None, None, {"gamma": 1.0}),
    ],
)
def test_bad_parameters(mode, eps, delta, params) -> None:
    env = instance(100).environment(0)
    with pytest.raises(ConfigError) as err:
        make_policy(
            NAMES[mode],
            env.info,
            np.random.default_rng(0),
            epsilon=eps,
            delta=delta,
            accounting="paper",
            **params,
        )
    assert "\n" not in str(err.value)


def test_action_norm_above_one_is_rejected() -> None:
    env = instance(100).environment(0)
    env.actions = env.actions * 1.5
    policy = make_policy("PhasedElimination", env.info, np.random.default_rng(0))
    with pytest.raises(ConfigError):
        policy.run(env)


def test_horizon_below_one_is_rejected() -> None:
    from dpbandits.contract import ProblemInfo

    info = ProblemInfo(family="linear", d=2, K=10, horizon=0, S=1.0)
    with pytest.raises(ConfigError) as err:
        make_policy("CentralDPElimination", info, np.random.default_rng(0), epsilon=1.0, delta=1e-6)
    assert "horizon" in str(err.value)


def test_ls_phased_elimination_baseline() -> None:
    """LS Ch. 22: widths 2^-l, phase lengths from the design, every round played, best kept."""
    inst = instance(10**5, seed=8, redraw=True)
    for trial in range(30):
        env = inst.environment(trial)
        policy = make_policy("LSPhasedElimination", env.info, np.random.default_rng(trial))
        result = policy.run(env)
        events = policy.events()
        assert result.regret.shape == (10**5,)
        assert policy.diagnostics()["best_eliminated"] == 0.0
        np.testing.assert_array_equal(
            events["gamma"], 2.0 ** -np.arange(1, events["gamma"].size + 1)
        )
    design = compute_design(env.actions)
    first = batch_counts(design.weights, 2 * design.g * 4 * math.log(10 * 2 * 10**5), 10**5)
    assert events["batch_size"][0] == first.sum()
