"""The mechanism audits run the strict code path: a noise scale cut 10× there is caught, and the
audits and strict runs draw from the same exact samplers (docs/audits.md, "Mechanism audits")."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from types import CodeType
from typing import Any

import numpy as np
import pytest

from dpbandits.audit.registry import available, run_audit
from dpbandits.audit.spec import GLM_PAIR, SMALL_LINEAR, SMALL_POOL
from dpbandits.audit.table import MECHANISM_PLAN
from dpbandits.instances.registry import build_instance
from dpbandits.policies import elimination, get_policy_class, private_glm
from dpbandits.policies.linear_core import LinearPolicy
from dpbandits.privacy import _exact, dpsgd, release, tree
from dpbandits.privacy.exact_noise import ExactNoise

WEAKENING = 0.1
POINTS = {p.key: p for p in MECHANISM_PLAN}
# Runs per input: enough for a 10× weaker noise to put the bound near the attainable one.
RUNS = {"tree": 5_000, "counter": 5_000, "ts-release": 5_000, "ts-release-amp": 5_000,
        "dpsgd": 2_000, "shuffle-laplace~n1000": 5_000, "shuffle-laplace~n50": 20_000}
# Mechanisms whose 10× weakening no audit resolves (docs/audits.md, "What a 10× cut shows"):
# vector summation's theory constant leaves its noise ≈ 300× above the claim's need; the
# ab8fd16 node set is the authors' code state, which no strict run uses.
NOT_RESOLVED = {"vector-sum", "tree~coverab8fd16"}


def _scaled(owner: Any, name: str, index: int | None) -> Callable[..., Any]:
    """`owner.name` with its returned scale (or item `index` of it) multiplied by 0.1."""
    original = getattr(owner, name)

    def weakened(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        if index is None:
            return out * WEAKENING
        return (*out[:index], out[index] * WEAKENING, *out[index + 1:])

    return weakened


def _weaken_linear_release(monkeypatch: pytest.MonkeyPatch) -> None:
    """The strict linear policies' release σ (`LinearPolicy.calibrate_release`) × 0.1."""
    monkeypatch.setattr(LinearPolicy, "calibrate_release",
                        _scaled(LinearPolicy, "calibrate_release", None))


def _weaken_elimination(monkeypatch: pytest.MonkeyPatch) -> None:
    """The strict eliminations' Laplace scale (`elimination.release_scale`) × 0.1."""
    monkeypatch.setattr(elimination, "release_scale",
                        _scaled(elimination, "release_scale", None))


def _weaken_trees(monkeypatch: pytest.MonkeyPatch) -> None:
    """Private-GLM's tree-node σ (`tree_calibration`, where it is defined and where the policy
    imported it) × 0.1."""
    weakened = _scaled(tree, "tree_calibration", 0)
    monkeypatch.setattr(tree, "tree_calibration", weakened)
    monkeypatch.setattr(private_glm, "tree_calibration", weakened)


def _weaken_exact_gaussian(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every exact Gaussian calibration (`ExactNoise.calibrate_gaussian`, the strict fits' σ
    for the count and the gradient sums) × 0.1."""
    monkeypatch.setattr(ExactNoise, "calibrate_gaussian",
                        _scaled(ExactNoise, "calibrate_gaussian", 0))


WEAKEN: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "gaussian": _weaken_linear_release,
    "ts-release": _weaken_linear_release,
    "ts-release-amp": _weaken_linear_release,
    "laplace": _weaken_elimination,
    "shuffle-laplace~n1000": _weaken_elimination,
    "shuffle-laplace~n50": _weaken_elimination,
    "tree": _weaken_trees,
    "counter": _weaken_trees,
    "dpsgd": _weaken_exact_gaussian,
}


def _audit(key: str) -> Any:
    point = POINTS[key]
    runs = min(point.runs, RUNS.get(key, RUNS.get(point.name, point.runs)))
    return run_audit(point.name, point.epsilon, point.delta, runs=runs, seed=11,
                     **dict(point.options))


def test_every_mechanism_point_has_a_weakening_or_a_documented_limit() -> None:
    assert set(WEAKEN) | NOT_RESOLVED == set(POINTS)
    assert not set(WEAKEN) & NOT_RESOLVED


@pytest.mark.parametrize("key", sorted(WEAKEN))
def test_unweakened_strict_path_passes(key: str) -> None:
    result = _audit(key)
    assert result.verdict == "ok", result.summary()


@pytest.mark.parametrize("key", sorted(WEAKEN))
def test_noise_cut_tenfold_in_the_strict_path_is_caught(key: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    WEAKEN[key](monkeypatch)
    result = _audit(key)
    assert result.role == "audit" and result.noise_scale == 1.0
    assert result.bound.epsilon_lb > result.claimed_epsilon, result.summary()
    assert result.verdict == "EXCEEDS CLAIM"


# ---------------------------------------------------------------- the same sampler

SAMPLERS = ("discrete_gaussian", "discrete_gaussian_symmetric", "discrete_laplace")


class SamplerSpy:
    """Records, for every call of an exact C sampler, the code objects on the Python stack."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.stacks: list[tuple[str, set[CodeType]]] = []
        for name in SAMPLERS:
            monkeypatch.setattr(_exact, name, self._spy(name, getattr(_exact, name)))

    def _spy(self, name: str, sampler: Callable[..., None]) -> Callable[..., None]:
        def recorded(*args: Any) -> None:
            stack = {frame.f_code for frame, _ in traceback.walk_stack(None)}
            self.stacks.append((name, stack))
            sampler(*args)

        return recorded

    def reached(self, code: CodeType) -> set[str]:
        """The samplers called with `code` on the stack; the record is then cleared."""
        out = {name for name, stack in self.stacks if code in stack}
        self.stacks.clear()
        return out


def _strict_run(policy: str, instance: dict, **params: Any) -> None:
    """One strict run of `policy` on trial 0 of `instance`."""
    built = build_instance(dict(instance))
    cls = get_policy_class(policy)
    eps, delta = (4.0, 0.02) if policy == "Private-GLM" else (1.0, 1e-5)
    obj = cls(built.info, np.random.default_rng(5), epsilon=eps, delta=delta,
              accounting="strict", **params)
    obj.run(built.environment(0))


# audit key → (the strict code both must pass through, the sampler, a strict run reaching it)
SHARED: dict[str, tuple[CodeType, str, tuple[str, dict, dict]]] = {
    "gaussian": (release.draw.__code__, "discrete_gaussian",
                 ("RarelySwitching-zCDP", SMALL_POOL, {})),
    "ts-release": (release.draw.__code__, "discrete_gaussian",
                   ("AdaPrivate-TS", SMALL_POOL, {})),
    "laplace": (elimination._Batcher._private_sums.__code__, "discrete_laplace",
                ("CentralDPElimination", SMALL_LINEAR, {"width_scale": 0.02})),
    "shuffle-laplace~n50": (elimination._Batcher._reports.__code__, "discrete_laplace",
                            ("ShuffleDPElimination", SMALL_LINEAR, {"width_scale": 0.02})),
    "tree": (tree.MatrixTree.__init__.__code__, "discrete_gaussian",
             ("Private-GLM", GLM_PAIR, {})),
    "counter": (tree.MatrixTree.__init__.__code__, "discrete_gaussian",
                ("Private-GLM", GLM_PAIR, {})),
    "dpsgd": (dpsgd.noisy_gd_fit.__code__, "discrete_gaussian",
              ("Private-GLM", {**GLM_PAIR, "horizon": 100},
               {"counter_share": 0.9, "zeta": 0.5})),
}


@pytest.mark.parametrize("key", sorted(SHARED))
def test_audit_and_strict_run_call_the_same_sampler(key: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    code, sampler, (policy, instance, params) = SHARED[key]
    spy = SamplerSpy(monkeypatch)
    point = POINTS[key]
    run_audit(point.name, point.epsilon, point.delta, runs=40, seed=3, **dict(point.options))
    assert sampler in spy.reached(code), f"the {key} audit does not reach {code.co_qualname}"
    _strict_run(policy, instance, **params)
    assert sampler in spy.reached(code), f"a strict {policy} run does not reach " \
                                         f"{code.co_qualname}"


def test_the_audits_use_the_strict_policies_own_functions() -> None:
    """What Private-GLM imported is what the audits look up, and elimination's strict path is
    the one the Laplace audits drive (no copy of either)."""
    assert private_glm.tree_calibration is tree.tree_calibration
    assert private_glm.MatrixTree is tree.MatrixTree
    assert private_glm.noisy_gd_fit is dpsgd.noisy_gd_fit
    assert {"gaussian", "laplace", "counter", "tree", "dpsgd"} <= set(available())


def test_a_float_noise_path_does_not_reach_the_exact_samplers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control of the spy: the paper tree (float noise) reaches no exact sampler."""
    spy = SamplerSpy(monkeypatch)
    run_audit("tree", 4.0, 0.02, runs=40, seed=3, accounting="paper")
    assert spy.reached(tree.MatrixTree.__init__.__code__) == set()


def _on_grid(values: np.ndarray, grid: float) -> bool:
    steps = values / grid
    return bool(np.array_equal(steps, np.round(steps)))


@pytest.mark.parametrize("name, point", [("gaussian", (4.0, 0.02)), ("laplace", (1.0, 0.0))])
def test_audited_releases_lie_on_the_exact_noise_grid(name: str, point: tuple) -> None:
    """Every release is an integer multiple of the grid γ; float noise is not (control)."""
    samples = available()[name].sampler(*point, 2_000, np.random.default_rng(1))
    grid = samples.info["grid"]
    assert 0 < grid < 1
    for scores in (samples.scores0, samples.scores1):
        assert _on_grid(scores, grid), name
        assert len(np.unique(scores)) > 100
    float_noise = np.random.default_rng(1).normal(0.0, 1000 * grid, 2_000)
    assert not _on_grid(float_noise, grid)
