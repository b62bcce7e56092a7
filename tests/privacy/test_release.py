"""`privacy.release`: one function draws every TS-family release, prices the noise drawn and
records the pre-noise statistic; strict releases draw exact discrete noise only."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from dpbandits.contract import ProblemInfo
from dpbandits.errors import ConfigError
from dpbandits.policies import make_policy
from dpbandits.privacy import exact_noise
from dpbandits.privacy.exact_noise import ExactNoise, NumpyNoise
from dpbandits.privacy.ledger import PrivacyLedger
from dpbandits.privacy.release import recording, release

STAT = np.array([0.25, -1.5, 3.0])


def _release(noise, ledger=None, mechanism="gaussian", scale=2.0, sensitivity=1.0):
    return release(noise, ledger, STAT, name="s", mechanism=mechanism,
                   sensitivity=sensitivity, scale=scale)


def test_strict_gaussian_is_the_exact_mechanism_and_its_ledger_prices_the_sigma_drawn() -> None:
    ledger = PrivacyLedger(1.0, 1e-5)
    noise = ExactNoise(np.random.default_rng(5))
    out = _release(noise, ledger, scale=2.1)
    twin = ExactNoise(np.random.default_rng(5))
    np.testing.assert_array_equal(out, twin.release(STAT, 2.1))  # the same draws, bit for bit
    (entry,) = ledger.entries
    sigma, gamma = noise.effective_sigma(2.1), noise.grid(2.1)
    assert entry.noise_scale == sigma > 2.1  # on the grid, above the σ asked for
    assert entry.rho == (1.0 + gamma * math.sqrt(3)) ** 2 / (2 * sigma**2)


def test_paper_gaussian_is_numpys_draw_bit_for_bit() -> None:
    out = _release(NumpyNoise(np.random.default_rng(5)))
    z = np.random.default_rng(5).standard_normal(3)
    np.testing.assert_array_equal(out, STAT + 2.0 * z)  # the TS family's former draw


@pytest.mark.parametrize("exact", [True, False])
def test_laplace_prices_epsilon_of_the_scale_drawn(exact: bool) -> None:
    ledger = PrivacyLedger(10.0, 0.0)
    noise = (ExactNoise if exact else NumpyNoise)(np.random.default_rng(1))
    _release(noise, ledger, "laplace", scale=0.5)
    (entry,) = ledger.entries
    b = noise.effective_scale(0.5)
    assert entry.noise_scale == b and entry.delta == 0.0
    assert entry.epsilon == (1.0 + noise.grid(0.5) * 3) / b


def test_recording_keeps_the_statistic_and_a_replay_returns_the_first_runs_values() -> None:
    with recording() as first:
        out = _release(ExactNoise(np.random.default_rng(2)))
    (record,) = first.records
    np.testing.assert_array_equal(record.statistic, STAT)
    np.testing.assert_array_equal(record.released, out)
    assert (record.norm, record.sensitivity) == ("l2", 1.0)
    with recording(first.records) as second:
        again = release(ExactNoise(np.random.default_rng(9)), None, STAT + 1, name="s",
                        mechanism="gaussian", sensitivity=1.0, scale=2.0)
    np.testing.assert_array_equal(again, out)
    np.testing.assert_array_equal(second.records[0].statistic, STAT + 1)
    with recording(first.records), pytest.raises(ConfigError, match="no counterpart"):
        for _ in range(2):
            _release(ExactNoise(np.random.default_rng(9)))
    assert _release(ExactNoise(np.random.default_rng(2))) is not None  # nothing left recording


def test_bad_mechanism_is_one_error_line() -> None:
    with pytest.raises(ConfigError, match="mechanism = 'cauchy' is not allowed; allowed: "
                                          "gaussian, laplace"):
        _release(ExactNoise(np.random.default_rng(0)), mechanism="cauchy")


class NoFloatNoise(np.random.Generator):
    """A generator whose float samplers fail: the exact samplers use only its bit generator."""

    def _refuse(self, *args, **kwargs):
        raise AssertionError("float noise drawn")

    normal = standard_normal = laplace = gamma = random = _refuse

    def spawn(self, n_children: int) -> list:
        """Children that refuse float draws too."""
        return [NoFloatNoise(g.bit_generator) for g in super().spawn(n_children)]


def _run(name: str, accounting: str, refuse_floats: bool = True) -> list:
    """The releases of a 30-round run (B = 10), its noise generator refusing float draws."""
    info = ProblemInfo("linear", 3, 2, 30, 1.0)
    pol = make_policy(name, info, np.random.default_rng(0), epsilon=1.0, delta=1e-5,
                      accounting=accounting, B=10)
    if refuse_floats:
        pol.noise.rng = pol.noise_rng = NoFloatNoise(pol.noise_rng.bit_generator)
    g = np.random.default_rng(1)
    with recording() as recorder:
        for t in range(30):
            arms = pol.prepare_arms(g.standard_normal((2, 3)))
            i = pol.select(t, arms)
            pol.update(t, arms[i], float(g.random()))
    return recorder.records


def _on_grid(records: list) -> bool:
    """Every released coordinate a multiple of its release's grid γ (snapped + γ·Z)."""
    grid = ExactNoise(np.random.default_rng(0)).grid
    return all(np.array_equal(np.round(r.released / grid(r.drawn.scale)),
                              r.released / grid(r.drawn.scale)) for r in records)


def _count_exact_calls(monkeypatch: pytest.MonkeyPatch, sampler: str) -> list[int]:
    """A one-element counter of the calls of the C sampler `sampler` (e.g. discrete_gaussian),
    the samplers otherwise unchanged."""
    calls = [0]
    counting = SimpleNamespace(**{k: getattr(exact_noise._exact, k)
                                  for k in dir(exact_noise._exact) if not k.startswith("__")})
    original = getattr(counting, sampler)

    def count(*args):
        calls[0] += 1
        return original(*args)

    setattr(counting, sampler, count)
    monkeypatch.setattr(exact_noise, "_exact", counting)
    return calls


@pytest.mark.parametrize("name", ["AdaPrivate-TS", "AdaPrivate-TS-Amp", "AdaPrivate-UCB"])
def test_strict_runs_draw_no_float_noise_and_every_release_is_on_the_exact_grid(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_exact_calls(monkeypatch, "discrete_gaussian")
    records = _run(name, "strict")
    assert len(records) == 3 and calls[0] == 3  # one exact draw per release
    assert _on_grid(records)
    with pytest.raises(AssertionError, match="float noise drawn"):  # the spy sees float draws
        _run(name, "paper")
    assert not _on_grid(_run(name, "paper", refuse_floats=False))


def test_the_ts_release_audit_and_strict_runs_call_the_same_sampler(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The mechanism audit `ts-release` drives the policy's own release: every draw it makes
    is `privacy.release.draw` with exact noise, as in a strict run."""
    from dpbandits.audit.mechanisms import ts_release
    from dpbandits.privacy import release as module

    seen: list[str] = []
    draw = module.draw

    def spy(noise, statistic, mechanism, scale):
        seen.append(type(noise).__name__)
        return draw(noise, statistic, mechanism, scale)

    monkeypatch.setattr(module, "draw", spy)
    ts_release(4.0, 0.02, 5, np.random.default_rng(0), accounting="strict")
    assert len(seen) == 2 * 5 and set(seen) == {"ExactNoise"}
    seen.clear()
    _run("AdaPrivate-TS", "strict")
    assert set(seen) == {"ExactNoise"} and len(seen) == 3


def _elimination_releases(name: str, accounting: str) -> list:
    """The releases of a batched run (T = 400), the policy's generator refusing float draws."""
    from dpbandits.instances.registry import build_instance

    env = build_instance({"generator": "linear_sphere", "K": 4, "d": 2, "horizon": 400,
                          "seed": 3}).environment(0)
    pol = make_policy(name, env.info, NoFloatNoise(np.random.PCG64(0)), epsilon=1.0,
                      delta=1e-6, accounting=accounting, path="explicit", clip=1.0)
    with recording() as recorder:
        pol.play_batched(env)
    return recorder.records


@pytest.mark.parametrize("name", ["CentralDPElimination", "LocalDPElimination",
                                  "ShuffleDPElimination"])
def test_strict_eliminations_draw_no_float_noise_one_exact_call_per_release(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_exact_calls(monkeypatch, "discrete_laplace")
    records = _elimination_releases(name, "strict")
    assert len(records) >= 3 and calls[0] == len(records)  # one exact draw per batch
    assert _on_grid(records)
    with pytest.raises(AssertionError, match="float noise drawn"):  # the spy sees float draws
        _elimination_releases(name, "paper")


def test_a_vector_sum_is_drawn_by_its_protocol_and_priced_from_the_b_drawn() -> None:
    """The `vector-sum` release: the protocol's own output, σ̃ and ε(b) of the parameters it
    drew in the ledger, the exact sum recorded; a replaying run sees the values ahead."""
    from dpbandits.privacy.release import upcoming
    from dpbandits.privacy.vector_sum import vector_sum, vector_sum_epsilon, vector_sum_params

    users = np.random.default_rng(0).uniform(-0.5, 0.5, (40, 2))
    params = vector_sum_params(40, 2, 1.0, 0.5, 1e-5)

    def run(seed: int, replay=None):
        ledger = PrivacyLedger(1.0, 1e-5)
        rng = np.random.default_rng(seed)
        with recording(replay) as recorder:
            ahead = upcoming()
            out = release(None, ledger, users.sum(axis=0), name="v", mechanism="vector-sum",
                          sensitivity=2.0, scale=math.nan,
                          sample=lambda: (vector_sum(users, params, rng), params))
        return out, ledger, recorder.records, ahead

    out, ledger, records, ahead = run(1)
    assert ahead is None
    np.testing.assert_array_equal(out, vector_sum(users, params, np.random.default_rng(1)))
    (entry,) = ledger.entries
    assert entry.noise_scale == params.noise_sd and entry.delta == 1e-5
    assert entry.epsilon == vector_sum_epsilon(params) <= 0.5
    assert records[0].norm == "l2" and records[0].drawn.detail is params
    np.testing.assert_array_equal(records[0].statistic, users.sum(axis=0))
    again, _, _, ahead = run(2, replay=records)
    np.testing.assert_array_equal(again, out)
    np.testing.assert_array_equal(ahead, out)
    with pytest.raises(ConfigError, match="sampler"):
        release(None, None, users.sum(axis=0), name="v", mechanism="vector-sum",
                sensitivity=2.0, scale=math.nan)


def test_merged_releases_share_one_entry_at_the_largest_cost_drawn() -> None:
    """`merge`: a run of releases of one name is one entry of `count` releases, at the largest
    ρ drawn of any, the smallest σ and the largest Δ (so count·ρ ≥ the sum); another name or
    partition starts a new entry."""
    ledger = PrivacyLedger(100.0, 1e-5)
    noise = NumpyNoise(np.random.default_rng(0))
    for sensitivity, scale in [(1.0, 2.0), (0.5, 4.0), (2.0, 3.0)]:
        release(noise, ledger, STAT, name="theta", mechanism="gaussian",
                sensitivity=sensitivity, scale=scale, merge=True)
    (entry,) = ledger.entries
    assert (entry.count, entry.noise_scale, entry.sensitivity) == (3, 2.0, 2.0)
    assert entry.rho == max(1 / 8, 0.25 / 32, 4 / 18)
    release(noise, ledger, STAT, name="other", mechanism="gaussian", sensitivity=1.0,
            scale=2.0, merge=True)
    release(noise, ledger, STAT, name="other", mechanism="gaussian", sensitivity=1.0,
            scale=2.0, partition="p", merge=True)
    assert [e.count for e in ledger.entries] == [3, 1, 1]


def _run_zcdp(name: str, accounting: str, refuse_floats: bool = True) -> list:
    """The releases of a 40-round run of a zCDP linear baseline (d = 2, so that episodes
    end), its noise generator refusing float draws."""
    info = ProblemInfo("linear", 2, 3, 40, 1.0)
    pol = make_policy(name, info, np.random.default_rng(0), epsilon=1.0, delta=1e-5,
                      accounting=accounting)
    if refuse_floats:
        pol.noise.rng = pol.noise_rng = NoFloatNoise(pol.noise_rng.bit_generator)
    g = np.random.default_rng(1)
    with recording() as recorder:
        for t in range(40):
            arms = pol.prepare_arms(g.standard_normal((3, 2)))
            i = pol.select(t, arms)
            pol.update(t, arms[i], float(g.random()))
    return recorder.records


@pytest.mark.parametrize("name", ["DGS-LinUCB", "zCDP-Episodic", "RarelySwitching-zCDP",
                                  "AdaC-OFUL-zCDP"])
def test_strict_zcdp_baselines_draw_no_float_noise_and_release_on_the_exact_grid(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """One exact call per release (zCDP-Episodic: its noise rows come in blocks, at most one
    call per release); paper runs draw floats and release off the grid (the control)."""
    calls = _count_exact_calls(monkeypatch, "discrete_gaussian")
    records = _run_zcdp(name, "strict")
    assert len(records) >= 3 and _on_grid(records)
    if name == "zCDP-Episodic":
        assert 1 <= calls[0] <= len(records)
    else:
        assert calls[0] == len(records)
    with pytest.raises(AssertionError, match="float noise drawn"):
        _run_zcdp(name, "paper")
    assert not _on_grid(_run_zcdp(name, "paper", refuse_floats=False))


def _joint_run(name: str, accounting: str) -> list:
    """The releases of one release-check pair of Private-GLM or JDP-LinUCB, every generator
    of the policy refusing float draws (the exact samplers use only the bit generator)."""
    from dpbandits.audit.release_checks import CASES

    case = next(c for c in CASES if c.policy == name)
    seed, pair = case.pairs(case, 1)[0]
    arms, rewards = case.instance(case, pair, 0, seed)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(np.random, "default_rng", lambda s=None: NoFloatNoise(np.random.PCG64(s)))
        records, _ = case.play(case, accounting, arms, rewards, seed)
    return records


@pytest.mark.parametrize("name", ["Private-GLM", "JDP-LinUCB"])
def test_strict_joint_dp_runs_draw_no_float_noise(name: str) -> None:
    """Tree nodes, the counter, the fits' counts and gradient sums: exact noise only; every
    fit release on the grid of its σ (snapped sum + γ·Z)."""
    records = _joint_run(name, "strict")
    assert records and {r.drawn.mechanism for r in records} == {"gaussian"}
    fits = [r for r in records if r.name.startswith("theta_w fits")]
    assert (len(fits) > 0) == (name == "Private-GLM")
    assert _on_grid(fits)
    with pytest.raises(AssertionError, match="float noise drawn"):  # the spy sees float draws
        _joint_run(name, "paper")
