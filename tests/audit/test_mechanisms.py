"""Mechanism audits: each claimed ε survives its audit; under-noised mechanisms are caught."""

from __future__ import annotations

import pytest

from dpbandits.audit.registry import available, run_audit
from dpbandits.errors import ConfigError

# Runs per input small enough for a unit test (the `audit` workflow target uses the defaults).
FAST_RUNS = {
    "gaussian": 200_000,
    "laplace": 200_000,
    "shuffle-laplace": 200_000,
    "tree": 2_000,
    "ts-release": 2_000,
    "ts-release-amp": 2_000,
    "vector-sum": 1_000,
    "dpsgd": 1_000,
}
PAPER_RUNS = {"dpsgd": 100}

MECHANISMS = [name for name, spec in available().items() if spec.kind == "mechanism"]
CASES = [
    (name, mode)
    for name in MECHANISMS
    for mode in (("strict", "paper") if "accounting" in available()[name].options else ("strict",))
]


def test_every_landed_mechanism_has_a_fast_setting() -> None:
    assert set(MECHANISMS) <= set(FAST_RUNS)
    assert {"gaussian", "laplace"} <= set(MECHANISMS)


@pytest.mark.parametrize("name, accounting", CASES)
@pytest.mark.parametrize("epsilon, delta", [(1.0, 1e-5), (4.0, 1e-3)])
def test_lower_bound_does_not_exceed_the_claim(
    name: str, accounting: str, epsilon: float, delta: float
) -> None:
    runs = (PAPER_RUNS if accounting == "paper" else FAST_RUNS).get(name, FAST_RUNS[name])
    result = run_audit(name, epsilon, delta, runs=runs, seed=1, accounting=accounting)
    assert not result.violated, result.summary()
    assert 0.0 <= result.bound.epsilon_lb <= result.claimed_epsilon
    assert result.bound.n0 == runs - runs // 2


@pytest.mark.parametrize("name, runs", [("gaussian", 2_000_000), ("laplace", 200_000)])
def test_halved_noise_is_caught(name: str, runs: int) -> None:
    """σ (or b) halved: the lower bound at the same claimed ε exceeds it (ε = 1, δ = 1e-5)."""
    honest = run_audit(name, 1.0, 1e-5, runs=runs, seed=2)
    halved = run_audit(name, 1.0, 1e-5, runs=runs, seed=2, noise_scale=0.5)
    assert not honest.violated
    assert halved.violated, halved.summary()


@pytest.mark.parametrize(
    "name, runs, scale",
    [("tree", 5_000, 0.2), ("ts-release", 5_000, 0.2), ("dpsgd", 3_000, 0.1)],
)
def test_under_noised_project_code_is_caught(name: str, runs: int, scale: float) -> None:
    """The audits that drive the project's own mechanism code catch a shrunken noise scale."""
    if name not in MECHANISMS:
        pytest.skip(f"{name} has not landed")
    result = run_audit(name, 1.0, 1e-5, runs=runs, seed=3, noise_scale=scale)
    assert result.violated, result.summary()


def test_laplace_audit_is_tight() -> None:
    """For Laplace the test {x > Δ} attains e^ε exactly; with ≥ 10⁴ events in each count the
    Clopper–Pearson slack is below 0.05, so the bound lands within 5% of ε."""
    result = run_audit("laplace", 2.0, 0.0, runs=400_000, seed=4)
    assert 0.95 * 2.0 <= result.bound.epsilon_lb <= 2.0


def test_audits_are_reproducible_from_the_seed() -> None:
    a = run_audit("gaussian", 1.0, 1e-5, runs=20_000, seed=9)
    b = run_audit("gaussian", 1.0, 1e-5, runs=20_000, seed=9)
    c = run_audit("gaussian", 1.0, 1e-5, runs=20_000, seed=10)
    assert a.bound == b.bound
    assert a.bound != c.bound


@pytest.mark.parametrize(
    "kwargs, text",
    [
        ({"name": "nope"}, "unknown audit 'nope'"),
        ({"epsilon": -1.0}, "epsilon = -1.0"),
        ({"epsilon": float("nan")}, "epsilon = nan"),
        ({"delta": 1.5}, "delta = 1.5"),
        ({"runs": 3}, "runs = 3"),
        ({"noise_scale": 0.0}, "noise_scale = 0.0"),
        ({"seed": -2}, "seed = -2"),
        ({"accounting": "loose"}, "accounting = 'loose'"),
        ({"name": "gaussian", "delta": 0.0}, "delta = 0.0"),
        ({"name": "gaussian", "accounting": "paper"}, "does not take option(s) accounting"),
    ],
)
def test_bad_arguments_raise_one_line(kwargs: dict, text: str) -> None:
    args = {"name": "laplace", "epsilon": 1.0, "delta": 1e-5, "runs": 100, **kwargs}
    with pytest.raises(ConfigError) as info:
        run_audit(args.pop("name"), args.pop("epsilon"), args.pop("delta"), **args)
    message = str(info.value)
    assert text in message
    assert "\n" not in message
