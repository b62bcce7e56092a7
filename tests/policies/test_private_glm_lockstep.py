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
from dpbandits.privacy.exact_noise import ExactNoise, NumpyNoise
from dpbandits.privacy.ledger import PrivacyLedger
from dpbandits.privacy.tree import MatrixTree, StackedTrees, gershgorin_short, transpose

from helpers import isolated_cache  # noqa: F401 (a fixture)

DELTA = 0.02
SKIPPED = (np.random.Generator, ExactNoise, NumpyNoise)  # their draws show in the numbers
MODES = {
    "paper": {"accounting": "paper"},
    "strict": {"accounting": "strict"},
    "ab8fd16": {"accounting": "paper", "code_state": "ab8fd16"},
}


pytestmark = pytest.mark.usefixtures("isolated_cache")


def _trials(mode: str, d: int = 2, family: str = "logistic", trials: int = 4,
            horizon: int = 400, seed: int = 7) -> tuple[list[pg.PrivateGLM], list]:
    """Fresh policies and environments of one shard: large κ (Criterion I fires often, so
    trials differ in which rounds are warm), κ* = 2 (ab8fd16's switch cutoff c₂ = 2 ≥ 1), a
    generous ε."""
    inst = GLMInstance(family, d, 5, 1.0, horizon, 3)
    info = dataclasses.replace(inst.info, kappa=2000.0, kappa_star=2.0, kappa_pub=2000.0,
                               kappa_star_pub=2.0)
    policies = [pg.PrivateGLM(info, np.random.default_rng(seed + trial), epsilon=50.0,
                              delta=DELTA, **MODES[mode]) for trial in range(trials)]
    return policies, [inst.environment(trial) for trial in range(trials)]


def _state(value: object) -> object:
    """A comparable form of an object's whole state, in which two floats are equal only when
    their bits are; generators, noise sources and functions are left out (their draws show in
    the numbers), the ledger is compared as its JSON."""
    if isinstance(value, PrivacyLedger):
        return value.to_json()
    if isinstance(value, pg.PrivateGLM | MatrixTree):
        state = dict(vars(value))
        if isinstance(value, pg.PrivateGLM):  # rows past the counts are never written
            state["zw_x"], state["zw_y"] = value.zw_x[: value.n_w], value.zw_y[: value.n_w]
            state["znw_x"], state["znw_y"] = value.znw_x[: value.n_nw], value.znw_y[: value.n_nw]
        return {k: _state(v) for k, v in state.items()
                if not isinstance(v, SKIPPED) and not callable(v)
                and k not in ("_samplers", "link")}
    if isinstance(value, dict):
        return {k: _state(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_state(v) for v in value]
    if isinstance(value, np.ndarray | float | np.floating):
        array = np.asarray(value)
        return (array.dtype.str, array.shape, array.tobytes())
    if dataclasses.is_dataclass(value):
        return _state(vars(value))
    return value


def _runs(policies: list[pg.PrivateGLM], results: list) -> list:
    return [_state({"regret": r.regret, "reward": r.reward, "events": r.events,
                    "diagnostics": r.diagnostics, "policy": p})
            for p, r in zip(policies, results, strict=True)]


def _lockstep_and_alone(mode: str, **kwargs) -> tuple[list, list]:
    policies, envs = _trials(mode, **kwargs)
    together = _runs(policies, runner.run_trials(policies, envs))
    policies, envs = _trials(mode, **kwargs)
    alone = _runs(policies, [runner.run_policy(p, e) for p, e in zip(policies, envs, strict=True)])
    return together, alone


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("family", ["logistic", "probit"])
@pytest.mark.parametrize("d", [2, 3, 5])
def test_every_trial_gets_the_bits_of_its_own_run(mode: str, family: str, d: int,
                                                  monkeypatch) -> None:
    played_alone: list[int] = []
    select = pg.PrivateGLM.select
    monkeypatch.setattr(pg.PrivateGLM, "select",
                        lambda self, t, arms: played_alone.append(t) or select(self, t, arms))
    together, alone = _lockstep_and_alone(mode, d=d, family=family)
    assert len(played_alone) == 4 * 400  # the runs alone: the others were in lockstep
    assert together == alone
    # the runs exercise what the driver hands to the policies: warm rounds that differ between
    # trials, θ_w fits (strict: started by the counter), the end of the warm-up (c₁ fits, then
    # discarded Criterion-I samples; strict at d ≥ 3)
    warm = [run["events"]["warmup_times"] for run in alone]
    assert all(w[1][0] for w in warm) and len({w[2] for w in warm}) > 1
    assert all(run["policy"]["n1"] for run in alone)
    if mode != "strict" or d >= 3:
        assert all(run["policy"]["stop1"] and run["policy"]["discarded"] for run in alone)


@pytest.mark.parametrize("mode", list(MODES))
def test_switches_and_their_fits_are_the_policies_own(mode: str) -> None:
    """d = 1 (ab8fd16's node sums are not stacked there: its trials run one after another)."""
    together, alone = _lockstep_and_alone(mode, d=1, family="probit")
    assert together == alone
    assert any(run["policy"]["n2"] for run in alone)  # Criterion II switched some trial


def test_a_changed_bit_is_caught(monkeypatch) -> None:
    """Negative control: x·θ one ulp above `x @ θ` (a sum in another order can equal it, on
    machines whose BLAS sums these short rows in order)."""
    dot = lk.stacked_dot
    monkeypatch.setattr(lk, "stacked_dot",
                        lambda rows, vectors: np.nextafter(dot(rows, vectors), np.inf))
    together, alone = _lockstep_and_alone("paper", d=5)
    assert together != alone


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("family", ["logistic", "probit"])
def test_the_compiled_rounds_play_the_cold_rounds_and_leave_the_others(
        mode: str, family: str, monkeypatch) -> None:
    """`play_rounds` plays stretches of cold rounds in one call and stops before a warm
    round, a switch or (strict) a θ_w fit, which `select`/`update` play: both kinds occur,
    and every trial keeps the bits of its own run."""
    compiled: list[int] = []
    stepped: list[int] = []
    play, select = lk.PrivateGLMLockstep.play_rounds, lk.PrivateGLMLockstep.select

    def counted_play(self, t: int, *args) -> int:  # noqa: ANN001, ANN002
        end = play(self, t, *args)
        compiled.append(end - t)
        return end

    monkeypatch.setattr(lk.PrivateGLMLockstep, "play_rounds", counted_play)
    monkeypatch.setattr(lk.PrivateGLMLockstep, "select",
                        lambda self, t, arms: stepped.append(t) or select(self, t, arms))
    together, alone = _lockstep_and_alone(mode, d=3, family=family, horizon=1200)
    assert together == alone
    assert sum(compiled) + len(stepped) == 1200
    assert sum(compiled) > 600 and len(stepped) > 20


def test_a_changed_bit_in_the_compiled_rounds_is_caught(monkeypatch) -> None:
    """Negative control: the compiled rounds given arms one ulp above the table's."""
    rounds = lk._stacked.private_glm_rounds

    def shifted(t: int, stop: int, tables: tuple, *args) -> int:  # noqa: ANN002
        arms = np.nextafter(tables[0], np.inf)
        return rounds(t, stop, (arms, *tables[1:]), *args)

    monkeypatch.setattr(lk._stacked, "private_glm_rounds", shifted)
    together, alone = _lockstep_and_alone("paper", d=3)
    assert together != alone


class _Captured(Exception):
    """Raised after a compiled call that played rounds, with its arguments as they were."""


def _copied(value: object) -> object:
    """Arrays copied, in tuples and lists as deep as they go; anything else as it is."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, list | tuple):
        return type(value)(_copied(item) for item in value)
    return value


def _first_call(mode: str, monkeypatch) -> list:
    """The arguments of a driver's first compiled call that plays rounds (a run of 2 trials,
    60 rounds), as they were before it: the run stops after it."""
    rounds = lk._stacked.private_glm_rounds

    def capture(*args) -> int:  # noqa: ANN002
        before = _copied(list(args))
        if rounds(*args) > args[0]:
            raise _Captured(before)
        return args[0]

    monkeypatch.setattr(lk._stacked, "private_glm_rounds", capture)
    policies, envs = _trials(mode, trials=2, horizon=60)
    with pytest.raises(_Captured) as captured:
        runner.run_trials(policies, envs)
    monkeypatch.undo()
    return captured.value.args[0]


def _replaced(args: list, where: tuple, value: object) -> list:
    """`args` with the item at the path `where` (indices into nested tuples) replaced."""
    if len(where) == 1:
        return [*args[: where[0]], value, *args[where[0] + 1:]]
    inner = list(args[where[0]])
    return _replaced(args, where[:1], tuple(_replaced(inner, where[1:], value)))


BAD_CALLS = {  # what is replaced (a path into the arguments), by what, and the error named
    "t after stop": ((0,), 70, "rounds 70 ... 60 are not allowed"),
    "mode": ((5, 0), 3, "mode = 3 is not allowed"),
    "link": ((5, 1), 7, "link = 7 is not allowed"),
    "int arms": ((2, 0), np.ones((60, 5, 2), dtype=np.int64), "arms is not allowed"),
    "chosen of floats": ((2, 5), np.zeros((2, 60)), "chosen is not allowed"),
    "read-only h_cur": ((3, 2), "read-only", "h_cur is not allowed; must be writeable"),
    "n_nw of int32": ((3, 12), np.zeros(2, dtype=np.int32), "n_nw is not allowed"),
    "n_nw at the end": ((3, 12), np.array([0, 60]), "n_nw 60 is not allowed"),
    "tree count": ((4, 0, 4), 61, "vtree's count 61 is not allowed"),
    "node outside the tree": ((4, 1, 2), "node 999", "node 999 is not allowed"),
}


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_the_compiled_rounds_refuse_other_arguments(case: str, monkeypatch) -> None:
    where, value, message = BAD_CALLS[case]
    mode = "ab8fd16" if case == "node outside the tree" else "paper"
    args = _first_call(mode, monkeypatch)
    if isinstance(value, str) and value == "read-only":
        value = args[3][2].copy()
        value.flags.writeable = False
    elif isinstance(value, str):
        value = args[4][1][2].copy()
        value[5, 0] = 999
    with pytest.raises(ValueError, match=message):
        lk._stacked.private_glm_rounds(*_replaced(args, where, value))
    assert lk._stacked.private_glm_rounds(*args) > args[0]  # control: the call as made plays


@pytest.mark.parametrize("d", [1, 2, 3, 5, 9])
def test_stacked_calls_equal_the_calls_of_one_trial(d: int) -> None:
    rng = np.random.default_rng(d)
    for family in ("logistic", "probit"):
        link = get_link(family)
        for _ in range(50):
            arms = rng.standard_normal((20, d)) / 3
            g = rng.standard_normal((5, d, d))
            a = g @ transpose(g) + 0.1 * np.eye(d)
            b = g @ g + 2.0 * np.eye(d)
            vals, vecs = small_linalg.eigh(a)
            theta = rng.standard_normal((5, d))
            x = arms[rng.integers(0, 20, 5)]
            norms = pg.inverse_norms(arms, vals, vecs)
            top = pg.gen_eig_max_whitened(b, vals, vecs)
            dots = lk.stacked_dot(x, theta)
            scores = lk.stacked_scores(arms, theta)
            outer = lk.stacked_outer(x)
            weights = link.dot(dots)
            signs, logdets = small_linalg.slogdet_stack(a)
            for i in range(5):
                assert norms[i].tobytes() == pg.inverse_norms(arms, vals[i], vecs[i]).tobytes()
                assert top[i] == pg.gen_eig_max_whitened(b[i], vals[i], vecs[i])
                assert dots[i].tobytes() == (x[i] @ theta[i]).tobytes()
                assert scores[i].tobytes() == (arms @ theta[i]).tobytes()
                assert outer[i].tobytes() == np.outer(x[i], x[i]).tobytes()
                single = link.dot(np.array(x[i] @ theta[i]))
                assert weights[i].tobytes() == single.tobytes()
                assert (signs[i], logdets[i]) == small_linalg.slogdet(a[i])


def _trees(cover: str, dim: int, count: int = 3, **kwargs) -> list[MatrixTree]:
    return [MatrixTree(40, dim, 0.3, np.random.default_rng(i), shift=2.0, cover=cover,
                       **kwargs) for i in range(count)]


@pytest.mark.parametrize("cover", ["dyadic", "ab8fd16"])
@pytest.mark.parametrize("dim", [2, 3])
def test_stacked_trees_release_what_each_tree_releases(cover: str, dim: int) -> None:
    rng = np.random.default_rng(0)
    alone, stacked = _trees(cover, dim), StackedTrees(_trees(cover, dim))
    repairs = 0
    for _ in range(40):
        rows = rng.random(3) < 0.5
        leaves = rng.standard_normal((int(rows.sum()), dim, dim)) * 3.0  # not PSD: repairs
        for i, tree in enumerate(alone):
            tree.update(leaves[int(rows[:i].sum())] if rows[i] else None)
        stacked.advance(rows, leaves)
        raw, released = stacked.query_raw(), stacked.query()
        vals, vecs = stacked.query_eigh()
        repairs += int(gershgorin_short(raw, 1e-12).sum())
        for i, tree in enumerate(alone):
            assert raw[i].tobytes() == tree.query_raw().tobytes()
            assert released[i].tobytes() == tree.query().tobytes()
            one_vals, one_vecs = tree.query_eigh()
            assert (vals[i].tobytes(), vecs[i].tobytes()) == (one_vals.tobytes(),
                                                              one_vecs.tobytes())
    assert repairs
    stacked.close()
    assert [_state(t) for t in stacked.trees] == [_state(t) for t in alone]


def test_trees_that_cannot_be_stacked_are_refused() -> None:
    assert StackedTrees.accepts(_trees("dyadic", 1))
    assert not StackedTrees.accepts(_trees("ab8fd16", 1))  # numpy sums that axis pairwise
    assert not StackedTrees.accepts(_trees("dyadic", 2, eager=False))  # noise drawn lazily
    mixed = _trees("dyadic", 2) + [MatrixTree(40, 2, 0.4, np.random.default_rng(9), shift=2.0)]
    assert not StackedTrees.accepts(mixed)  # another σ


def test_trials_that_cannot_play_together_run_one_after_another() -> None:
    paper, envs = _trials("paper", trials=2)
    strict, _ = _trials("strict", trials=1)
    assert lk.PrivateGLMLockstep.build([paper[0], strict[0]]) is None
    runner.run_policy(paper[1], envs[1])
    assert lk.PrivateGLMLockstep.build(paper) is None  # one has played already
    shared, envs = _trials("paper", trials=2)
    shared[1].rng = shared[0].rng
    assert runner._lockstep_driver(shared, envs) is None  # one generator for two trials

    class Variant(pg.PrivateGLM):
        """A subclass may play otherwise: it does not inherit the driver."""

    variants = [Variant(p.problem, np.random.default_rng(i), epsilon=50.0, delta=DELTA,
                        accounting="paper") for i, p in enumerate(paper)]
    assert runner._lockstep_driver(variants, envs) is None

    def noiseless() -> tuple[list[pg.PrivateGLM], list]:
        policies, envs = _trials("paper", trials=2)
        return [pg.PrivateGLM(p.problem, np.random.default_rng(i), epsilon=50.0, delta=DELTA,
                              accounting="paper", noiseless=True)
                for i, p in enumerate(policies)], envs

    policies, envs = noiseless()
    assert lk.PrivateGLMLockstep.build(policies) is None  # no noise tables to stack
    together = _runs(policies, runner.run_trials(policies, envs))
    policies, envs = noiseless()
    alone = _runs(policies, [runner.run_policy(p, e) for p, e in zip(policies, envs, strict=True)])
    assert together == alone
