"""Private-GLM's trials in lockstep give every trial the bits of its own run
(docs/architecture.md, "Runner")."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpbandits import runner, small_linalg
from dpbandits.instances.glm import GLMInstance
from dpbandits.links import get_link
from dpbandits.policies import private_glm as pg
from dpbandits.policies import private_glm_lockstep as lk
from dpbandits.privacy import accountant
from dpbandits.privacy.tree import MatrixTree

DELTA = 0.02
MODES = {
    "paper": {"accounting": "paper"},
    "strict": {"accounting": "strict"},
    "ab8fd16": {"accounting": "paper", "code_state": "ab8fd16"},
}


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("DPBANDITS_CACHE", str(tmp_path_factory.getbasetemp() / "acc-cache"))
    accountant.clear_memo()
    yield
    accountant.clear_memo()


def _trials(mode: str, trials: int = 4, horizon: int = 400, d: int = 2,
            family: str = "logistic") -> tuple[list[pg.PrivateGLM], list]:
    """Fresh policies and environments of one shard: large κ (Criterion I fires often, so
    trials differ in which rounds are warm), κ* = 2 (ab8fd16's switch cutoff c₂ = 2 ≥ 1), a
    generous ε."""
    inst = GLMInstance(family, d, 5, 1.0, horizon, 3)
    info = dataclasses.replace(inst.info, kappa=2000.0, kappa_star=2.0, kappa_pub=2000.0,
                               kappa_star_pub=2.0)
    policies = [pg.PrivateGLM(info, np.random.default_rng(7 + trial), epsilon=50.0,
                              delta=DELTA, **MODES[mode]) for trial in range(trials)]
    return policies, [inst.environment(trial) for trial in range(trials)]


def _record(policy: pg.PrivateGLM, result) -> dict:
    """Everything a run leaves: its trace, records, ledger and the policy's final state."""
    state = {name: getattr(policy, name) for name in (
        "theta_w", "theta_tau", "v_vals", "v_vecs", "h_cur", "n_w", "n_nw", "n1", "n2",
        "stop1", "stop2", "discarded")}
    state["h_prev_eig"] = policy.h_prev_eig
    state["trees"] = [(tree.count, tree._prefix) for tree in (policy.vtree, policy.htree)]
    state["Z_nw"] = (policy.znw_x[: policy.n_nw], policy.znw_y[: policy.n_nw])
    return {"regret": result.regret, "reward": result.reward, "events": result.events,
            "diagnostics": result.diagnostics, "ledger": policy.ledger.to_json(),
            "state": state}


def _bits(value: object) -> object:
    """A comparable form in which two floats are equal only when their bits are."""
    if isinstance(value, dict):
        return {k: _bits(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_bits(v) for v in value]
    if isinstance(value, np.ndarray | float | np.floating):
        array = np.asarray(value)
        return (array.dtype.str, array.shape, array.tobytes())
    return value


def _lockstep_and_alone(mode: str, **kwargs) -> tuple[list, list]:
    policies, envs = _trials(mode, **kwargs)
    results = runner.run_trials(policies, envs)
    together = [_record(p, r) for p, r in zip(policies, results, strict=True)]
    policies, envs = _trials(mode, **kwargs)
    alone = [_record(p, runner.run_policy(p, e)) for p, e in zip(policies, envs, strict=True)]
    return together, alone


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("family", ["logistic", "probit"])
def test_every_trial_gets_the_bits_of_its_own_run(mode: str, family: str, monkeypatch) -> None:
    played_alone: list[int] = []
    select = pg.PrivateGLM.select
    monkeypatch.setattr(pg.PrivateGLM, "select",
                        lambda self, t, arms: played_alone.append(t) or select(self, t, arms))
    together, alone = _lockstep_and_alone(mode, family=family)
    assert len(played_alone) == 4 * 400  # the runs alone: the others were in lockstep
    assert _bits(together) == _bits(alone)
    # the runs exercise what the driver hands to the policies: warm rounds that differ between
    # trials, θ_w fits (strict: started by the counter; else the c₁ fits and then discarded
    # Criterion-I samples), and (probit) switches
    warm = [set(r["events"]["warmup_times"].tolist()) for r in alone]
    assert all(warm) and len({frozenset(w) for w in warm}) > 1
    if mode == "strict":
        assert all(len(r["events"]["warmup_fit_counts"]) for r in alone)
    else:
        assert all(r["state"]["stop1"] and r["state"]["discarded"] for r in alone)
    if family == "probit":
        assert any(len(r["events"]["switch_times"]) for r in alone)


def test_a_changed_bit_is_caught(monkeypatch) -> None:
    """Negative control: x·θ summed as (x * θ).sum() differs from `x @ θ` in the last bits."""
    monkeypatch.setattr(lk, "stacked_dot", lambda rows, vectors: (rows * vectors).sum(axis=1))
    together, alone = _lockstep_and_alone("paper", d=5)
    assert _bits(together) != _bits(alone)


@pytest.mark.parametrize("d", [1, 2, 3, 5, 9])
def test_stacked_calls_equal_the_calls_of_one_trial(d: int) -> None:
    rng = np.random.default_rng(d)
    link = get_link("logistic")
    for _ in range(50):
        arms = rng.standard_normal((20, d)) / 3
        g = rng.standard_normal((5, d, d))
        a = g @ lk.transpose(g) + 0.1 * np.eye(d)
        vals, vecs = small_linalg.eigh(a)
        theta = rng.standard_normal((5, d))
        x = arms[rng.integers(0, 20, 5)]
        norms = lk.stacked_inverse_norms(arms, vals, vecs)
        dots = lk.stacked_dot(x, theta)
        scores = lk.stacked_scores(arms, theta)
        outer = lk.stacked_outer(x)
        weights = link.dot(dots)
        for i in range(5):
            assert norms[i].tobytes() == pg._inverse_norms(arms, vals[i], vecs[i]).tobytes()
            assert dots[i].tobytes() == (x[i] @ theta[i]).tobytes()
            assert scores[i].tobytes() == (arms @ theta[i]).tobytes()
            assert outer[i].tobytes() == np.outer(x[i], x[i]).tobytes()
            assert weights[i] == float(link.dot(np.array(x[i] @ theta[i])))


def test_stacked_trees_release_what_each_tree_releases() -> None:
    def trees(cover: str, dim: int) -> list[MatrixTree]:
        return [MatrixTree(40, dim, 0.3, np.random.default_rng(i), shift=2.0, cover=cover)
                for i in range(3)]

    rng = np.random.default_rng(0)
    for cover in ("dyadic", "ab8fd16"):
        alone, stacked = trees(cover, 3), lk.StackedTrees(trees(cover, 3))
        for _ in range(40):
            rows = rng.random(3) < 0.5
            leaves = rng.standard_normal((int(rows.sum()), 3, 3))
            for tree, leaf in zip(np.array(alone, dtype=object)[rows], leaves, strict=True):
                tree.update(leaf)
            for tree in np.array(alone, dtype=object)[~rows]:
                tree.update(None)
            stacked.advance(rows, leaves)
            raw, repaired = stacked.query_raw(), stacked.query()
            for i, tree in enumerate(alone):
                assert raw[i].tobytes() == tree.query_raw().tobytes()
                assert repaired[i].tobytes() == tree.query().tobytes()
    assert not lk.StackedTrees.accepts(trees("ab8fd16", 1))  # node sums pairwise: not stacked
    assert lk.StackedTrees.accepts(trees("dyadic", 1))


def test_mixed_or_noiseless_trials_run_one_after_another(monkeypatch) -> None:
    paper, _ = _trials("paper", trials=1)
    strict, _ = _trials("strict", trials=1)
    assert lk.PrivateGLMLockstep.build([paper[0], strict[0]]) is None

    def noiseless() -> tuple[list[pg.PrivateGLM], list]:
        policies, envs = _trials("paper", trials=2)
        return [pg.PrivateGLM(p.problem, np.random.default_rng(i), epsilon=50.0, delta=DELTA,
                              accounting="paper", noiseless=True)
                for i, p in enumerate(policies)], envs

    policies, envs = noiseless()
    assert lk.PrivateGLMLockstep.build(policies) is None  # no noise tables to stack
    results = runner.run_trials(policies, envs)
    together = [_record(p, r) for p, r in zip(policies, results, strict=True)]
    policies, envs = noiseless()
    alone = [_record(p, runner.run_policy(p, e)) for p, e in zip(policies, envs, strict=True)]
    assert _bits(together) == _bits(alone)
