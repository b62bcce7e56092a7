"""AdaPrivate-TS (+Amp, +Adaptive) and AdaPrivate-UCB (the AdaPrivate-TS paper; docs/ts.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits.contract import ProblemInfo
from dpbandits.errors import ConfigError, PrivacyBudgetError
from dpbandits.instances.registry import build_instance
from dpbandits.linalg import cholesky, solve_lower_t
from dpbandits.policies import make_policy
from dpbandits.policies.adaprivate import AdaPrivateTS, AdaPrivateTSAmp
from dpbandits.privacy.subsampled import amp_sigma
from dpbandits.privacy.zcdp import rho_from_epsilon

DELTA = 1e-5
POOL = {"generator": "logistic_pool", "seed": 5}
PRIVATE = {"epsilon": 1.0, "delta": DELTA}


class TableEnv:
    """Fixed arms and rewards; the 'regret' of a pull is the chosen index (to read actions)."""

    def __init__(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        horizon, k, d = arms.shape
        self.info = ProblemInfo("linear", d, k, horizon, 1.0)
        self.contexts, self.rewards = arms, rewards
        self.horizon = horizon

    def arms(self, t: int) -> np.ndarray:
        return self.contexts[t]

    def pull(self, t: int, index: int) -> tuple[float, float]:
        return float(self.rewards[t, index]), float(index)


def table_env(horizon: int, d: int = 4, k: int = 5, seed: int = 0) -> TableEnv:
    g = np.random.default_rng(seed)
    arms = g.standard_normal((horizon, k, d))
    arms /= np.linalg.norm(arms, axis=2, keepdims=True)
    return TableEnv(arms, (g.random((horizon, k)) < 0.5).astype(float))


def actions(name: str, env: TableEnv, seed: int = 0, **params) -> np.ndarray:
    pol = make_policy(name, env.info, np.random.default_rng(seed), **PRIVATE, **params)
    return pol.run(env).regret.astype(int)


@pytest.mark.parametrize("name", ["AdaPrivate-TS", "AdaPrivate-UCB", "AdaPrivate-TS-Amp"])
def test_actions_of_a_batch_ignore_its_own_rewards(name: str) -> None:
    """Proof Step 3: rewards changed inside batch 2 leave batches 0–2 unchanged; later ones move."""
    env = table_env(300)
    base = actions(name, env, B=20, accounting="paper")
    changed = TableEnv(env.contexts, env.rewards.copy())
    changed.rewards[40:60] = 1.0 - changed.rewards[40:60]
    other = actions(name, changed, B=20, accounting="paper")
    np.testing.assert_array_equal(base[:60], other[:60])
    assert not np.array_equal(base[60:], other[60:])


def test_b_changes_only_at_batch_ends_and_counts_sum_to_t() -> None:
    """Proof Steps 3–4: b is constant within a batch; every reward is in exactly one increment."""
    env = table_env(50)
    pol = make_policy("AdaPrivate-TS", env.info, np.random.default_rng(0), B=7, **PRIVATE)
    changes = []
    for t in range(50):
        before = pol.b.copy()
        i = pol.select(t, env.arms(t))
        pol.update(t, env.arms(t)[i], env.pull(t, i)[0])
        if not np.array_equal(before, pol.b):
            changes.append(t + 1)
    # the last, partial batch (round 50) is released after the final round
    assert changes == [7, 14, 21, 28, 35, 42, 49, 50]
    assert pol.events()["batch_end"].tolist() == changes
    assert pol.events()["batch_rewards"].tolist() == [7] * 7 + [1]
    full = make_policy("AdaPrivate-TS", env.info, np.random.default_rng(0), B=7, **PRIVATE)
    full.run(env)
    assert full.events()["batch_end"].tolist() == changes
    assert full.events()["batch_rewards"].sum() == 50


@pytest.mark.parametrize("accounting", ["paper", "strict"])
def test_sensitivity_of_one_reward_is_its_feature_norm(accounting: str) -> None:
    """Proof Step 2: flipping one reward 0 → 1 moves the released increment by x_t (strict: up to
    one grid step per coordinate, the rounding its calibration accounts for)."""
    info = ProblemInfo("linear", 3, 1, 10, 1.0)
    xs = np.random.default_rng(3).standard_normal((5, 3)) / 1.5
    bs = []
    for flip in (0.0, 1.0):
        pol = make_policy("AdaPrivate-TS", info, np.random.default_rng(1), B=5,
                          **{**PRIVATE, "accounting": accounting})
        arms = pol.prepare_arms(xs)
        for t, x in enumerate(arms):
            pol.update(t, x, flip if t == 2 else 0.3)
        bs.append(pol.b.copy())
    x2 = xs[2] / max(1.0, np.linalg.norm(xs[2]))
    step = pol.noise.grid(pol.sigma)
    assert (step > 0) == (accounting == "strict")
    np.testing.assert_allclose(bs[1] - bs[0], x2, atol=1e-12 + step)
    assert np.linalg.norm(bs[1] - bs[0]) <= 1.0 + step * math.sqrt(3)


def _increments(pol, xs: np.ndarray, reward: float, batches: int) -> np.ndarray:
    """Feed the same B feature rows every batch; return the successive changes of b."""
    out = np.empty((batches, pol.d))
    t = 0
    for k in range(batches):
        before = pol.b.copy()
        for x in xs:
            pol.update(t, x, reward)
            t += 1
        out[k] = pol.b - before
    return out


def test_noise_on_b_has_calibrated_covariance() -> None:
    """Zero rewards → independent increments N(0, σ²I), so b_k ~ N(0, kσ²I)."""
    n = 3000
    info = ProblemInfo("linear", 3, 1, 2 * n, 1.0)
    pol = AdaPrivateTS(info, np.random.default_rng(0), B=2, **PRIVATE)
    xs = np.array([[0.6, 0.0, 0.8], [0.0, 1.0, 0.0]])
    inc = _increments(pol, xs, 0.0, n)
    sigma2 = 1.0 / (2.0 * rho_from_epsilon(1.0, DELTA))
    target = sigma2 * np.eye(3)
    se = np.sqrt((target**2 + np.outer(np.diag(target), np.diag(target))) / n)
    assert np.all(np.abs(np.cov(inc.T) - target) < 5 * se)
    assert np.all(np.abs(inc.mean(axis=0)) < 5 * np.sqrt(sigma2 / n))
    lag = (inc[1:] * inc[:-1]).mean(axis=0) / sigma2  # noise is not redrawn or reused
    assert np.all(np.abs(lag) < 5 / np.sqrt(n))
    np.testing.assert_allclose(pol.b, inc.sum(axis=0), atol=1e-9)
    np.testing.assert_allclose(pol.b, pol.noise_total, atol=1e-9)


def test_amp_increment_is_unbiased_with_the_stated_variance() -> None:
    """Section 3.2: E[s̃_sub/q] = s_k; Var = (σ_amp/q)² + Σ x²(1−q)/q; A ignores the Z_t."""
    q, n = 0.3, 3000
    info = ProblemInfo("linear", 2, 1, 4 * n, 1.0)
    xs = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0], [0.8, -0.6]])
    pol = AdaPrivateTSAmp(info, np.random.default_rng(0), B=4, q=q, accounting="paper",
                          **PRIVATE)
    inc = _increments(pol, xs, 1.0, n)
    np.testing.assert_allclose(pol.gram, np.eye(2) + n * xs.T @ xs, rtol=1e-12, atol=1e-9)
    sigma = amp_sigma(q, 1.0, DELTA)[0]
    mean_target = xs.sum(axis=0)
    var_target = (sigma / q) ** 2 + (xs**2).sum(axis=0) * (1 - q) / q
    centred = inc - inc.mean(axis=0)
    var = centred.var(axis=0, ddof=1)
    se_var = np.sqrt(((centred**4).mean(axis=0) - var**2) / n)
    assert np.all(np.abs(inc.mean(axis=0) - mean_target) < 5 * np.sqrt(var_target / n))
    assert np.all(np.abs(var - var_target) < 5 * se_var)
    assert "batch_rewards" not in pol.events()  # the Poisson sample stays secret
    included = np.asarray(pol.batch_counts)
    assert abs(included.mean() - 4 * q) < 5 * np.sqrt(4 * q * (1 - q) / n)


def test_posterior_proposition_monte_carlo() -> None:
    """Proposition 4: A⁻¹(b + η) + ξ has covariance v²A⁻¹ + σ²A⁻² (rel. Frobenius error < 2%)."""
    g = np.random.default_rng(0)
    x = g.standard_normal((30, 4))
    a = np.eye(4) + x.T @ x / 5
    v, sigma, n = 1.0, 2.0, 200_000
    factor = cholesky(np.asfortranarray(a))
    xi = v * solve_lower_t(factor, g.standard_normal((4, n)))
    eta = sigma * g.standard_normal((4, n))
    samples = np.linalg.solve(a, eta) + xi
    inv = np.linalg.inv(a)
    target = v**2 * inv + sigma**2 * inv @ inv
    err = np.linalg.norm(np.cov(samples) - target) / np.linalg.norm(target)
    assert err < 0.02


def test_adaptive_scale_follows_batches_and_tuned_v0() -> None:
    """v_k = 1.5·0.95^{k−1} by batch; tuned v₀ = 1 + σ/(d√λ₀).

    The tuned values of docs/ts.md, "AdaPrivate-TS-Adaptive" (v₀ = 2.096 at ε = 1).
    """
    env = table_env(10)
    pol = make_policy("AdaPrivate-TS-Adaptive", env.info, np.random.default_rng(0), B=3,
                      **PRIVATE)
    seen = []
    for t in range(10):
        seen.append(pol.exploration_scale())
        i = pol.select(t, env.arms(t))
        pol.update(t, env.arms(t)[i], 0.0)
    expected = [1.5 * 0.95 ** (t // 3) for t in range(10)]
    np.testing.assert_allclose(seen, expected)
    info20 = ProblemInfo("logistic", 20, 5, 10_000, 2.0)
    for eps, v0 in [(0.1, 11.75), (0.5, 3.169), (1, 2.096), (2, 1.559), (5, 1.236),
                    (10, 1.127)]:
        tuned = make_policy("AdaPrivate-TS-Adaptive", info20, np.random.default_rng(0),
                            epsilon=eps, delta=DELTA, v0="tuned")
        assert tuned.v0 == pytest.approx(v0, abs=6e-3)
    decayed = 1.5 * 0.95**33
    assert decayed == pytest.approx(0.276, abs=1e-3)


@pytest.mark.parametrize("private, reference", [("AdaPrivate-TS", "LinTS"),
                                                ("AdaPrivate-UCB", "LinUCB")])
def test_no_noise_and_unit_batches_reduce_to_the_non_private_policy(private, reference) -> None:
    """σ = 0 and B = 1 give identical action sequences."""
    inst = build_instance({**POOL, "horizon": 400})
    env = inst.environment(0)
    pol = make_policy(private, inst.info, np.random.default_rng(3), B=1, **PRIVATE)
    pol.sigma = 0.0
    ref = make_policy(reference, inst.info, np.random.default_rng(3))
    mine = [], []
    for t in range(400):
        arms = env.arms(t)
        for k, p in enumerate((pol, ref)):
            i = p.select(t, arms)
            p.update(t, arms[i], env.pull(t, i)[0])
            mine[k].append(i)
    assert mine[0] == mine[1]
    noisy = make_policy(private, inst.info, np.random.default_rng(3), B=1, **PRIVATE)
    assert not np.array_equal(noisy.run(inst.environment(0)).regret,
                              ref.run(inst.environment(0)).regret)


PRIVATE_POLICIES = ["AdaPrivate-TS", "AdaPrivate-TS-Amp", "AdaPrivate-TS-Adaptive",
                    "AdaPrivate-UCB", "JDP-LinUCB", "zCDP-Episodic", "AdaC-OFUL-zCDP",
                    "RarelySwitching-zCDP", "DGS-LinUCB"]


@pytest.mark.parametrize("name", PRIVATE_POLICIES)
def test_strict_ledger_within_budget(name: str) -> None:
    """The strict ledger never exceeds (ε, δ), for several ε."""
    inst = build_instance({**POOL, "horizon": 300})
    for eps in (0.5, 2.0, 8.0):
        pol = make_policy(name, inst.info, np.random.default_rng(0), epsilon=eps, delta=DELTA,
                          **({"B": 50} if name.startswith("AdaPrivate") else {}))
        pol.run(inst.environment(0))
        spent_eps, spent_delta = pol.ledger.spent()
        assert spent_eps <= eps * (1 + 1e-9) and spent_delta <= DELTA * (1 + 1e-9)
        pol.ledger.check()
        assert pol.ledger.entries


def test_parallel_composition_reports_rho_not_k_rho() -> None:
    """Proof Step 4: K releases of ρ each are declared as ρ in total."""
    inst = build_instance({**POOL, "horizon": 1000})
    pol = make_policy("AdaPrivate-TS", inst.info, np.random.default_rng(0), **PRIVATE)
    pol.run(inst.environment(0))
    assert len(pol.ledger.entries) == 4  # ⌈1000/300⌉ batches, the last of 100 rounds
    rho = rho_from_epsilon(1.0, DELTA)
    assert [e.partition for e in pol.ledger.entries] == [f"batch {k}" for k in range(1, 5)]
    each = pol.ledger.entries[0].rho
    assert all(e.rho == each for e in pol.ledger.entries)
    assert pol.ledger.rho_spent == each  # one batch's ρ, not 4ρ
    # strict: the ρ of the σ drawn, (1 + γ√d)²/(2σ²), a little below the planned ρ
    assert rho * (1 - 1e-5) < each <= rho
    assert pol.ledger.spent()[0] == pytest.approx(1.0, rel=1e-5)
    assert pol.diagnostics()["n_releases"] == 4


@pytest.mark.parametrize("name", ["AdaPrivate-TS", "AdaPrivate-TS-Amp", "AdaPrivate-UCB"])
@pytest.mark.parametrize("accounting", ["paper", "strict"])
def test_ledger_prices_the_sigma_drawn_not_the_plan(name: str, accounting: str) -> None:
    """Each entry states the σ the sampler used and the cost of that σ: a σ cut after
    calibration shows in the ledger (ρ × 100, or the subsampled ε at σ/10), which then fails."""
    info = ProblemInfo("linear", 3, 2, 40, 1.0)
    costs = []
    for cut in (1.0, 0.1):
        pol = make_policy(name, info, np.random.default_rng(0), B=10, accounting=accounting,
                          **PRIVATE)
        pol.sigma *= cut
        env = table_env(40, d=3, k=2)
        if cut == 1.0 or accounting == "paper":
            pol.run(env)  # the runner checks the ledger
        else:
            with pytest.raises(PrivacyBudgetError, match="overspent"):
                pol.run(env)
        entry = pol.ledger.entries[0]
        assert entry.noise_scale == pol.noise.effective_sigma(pol.sigma)
        costs.append(entry.rho if entry.rho is not None else entry.epsilon)
    assert costs[1] > 10 * costs[0]


def test_amp_is_infeasible_at_small_epsilon_unless_orders_extend() -> None:
    info = ProblemInfo("logistic", 4, 5, 100, 2.0)
    with pytest.raises(ConfigError, match="infeasible"):
        make_policy("AdaPrivate-TS-Amp", info, np.random.default_rng(0), epsilon=0.1,
                    delta=DELTA, accounting="paper")
    pol = make_policy("AdaPrivate-TS-Amp", info, np.random.default_rng(0), epsilon=0.1,
                      delta=DELTA, accounting="paper", orders="auto")
    assert pol.diagnostics()["orders_extended"] == 1.0
    # the paper's orders reach only ln(1/δ)/63 = 0.183 at the σ drawn for ε = 0.1
    assert pol.diagnostics()["rdp_capture"] == pytest.approx(0.504, abs=1e-3)
    paper = make_policy("AdaPrivate-TS-Amp", info, np.random.default_rng(0), epsilon=1.0,
                        delta=DELTA, accounting="paper")
    strict = make_policy("AdaPrivate-TS-Amp", info, np.random.default_rng(0), epsilon=1.0,
                         delta=DELTA)
    assert paper.sigma == pytest.approx(2.593, abs=1e-3) and strict.sigma > paper.sigma
    diag = paper.diagnostics()
    assert diag["rdp_capture"] == pytest.approx(0.9815, abs=1e-4)
    assert (diag["alpha_star"], diag["alpha_star_dense"]) == (16.0, 18.0)
    assert paper.sigma_effective == pytest.approx(paper.sigma / 0.3)


def test_mean_gram_current_differs_from_batch_start() -> None:
    env = table_env(120)
    a = actions("AdaPrivate-UCB", env, B=40)
    b = actions("AdaPrivate-UCB", env, B=40, mean_gram="current")
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(a, actions("AdaPrivate-UCB", env, B=40))  # deterministic


BAD = [
    ("AdaPrivate-TS", {"epsilon": 0.0}, "epsilon = 0.0"),
    ("AdaPrivate-TS", {"epsilon": -1.0}, "epsilon = -1.0"),
    ("AdaPrivate-UCB", {"delta": 0.0}, "delta = 0.0"),
    ("AdaPrivate-UCB", {"delta": 1.0}, "delta = 1.0"),
    ("DGS-LinUCB", {"delta": 1.5}, "delta = 1.5"),
    ("AdaPrivate-TS-Amp", {"q": 0.0}, "q = 0.0"),
    ("AdaPrivate-TS-Amp", {"q": 1.2}, "q = 1.2"),
    ("AdaPrivate-TS", {"B": 0}, "B = 0"),
    ("AdaPrivate-UCB", {"B": 0.5}, "B = 0.5"),
    ("AdaPrivate-TS", {"v": 0.0}, "v = 0.0"),
    ("AdaPrivate-TS-Adaptive", {"v": -1.0}, "v = -1.0"),
    ("AdaPrivate-TS-Adaptive", {"v0": 0.0}, "v0 = 0.0"),
    ("AdaPrivate-TS", {"mean_gram": "latest"}, "mean_gram"),
    ("AdaPrivate-TS", {"conversion": "loose"}, "conversion"),
    ("zCDP-Episodic", {"c_trigger": 0.5}, "c_trigger = 0.5"),
    ("JDP-LinUCB", {"epsilon": math.inf}, "epsilon = inf"),
]


@pytest.mark.parametrize("name, override, match", BAD)
def test_bad_input_is_one_line(name: str, override: dict, match: str) -> None:
    info = ProblemInfo("logistic", 4, 5, 100, 2.0)
    kwargs = {**PRIVATE, **override}
    with pytest.raises(ConfigError, match=match) as err:
        make_policy(name, info, np.random.default_rng(0), **kwargs)
    assert "\n" not in str(err.value)
