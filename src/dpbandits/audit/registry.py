"""Audit registry and runner: a named audit → neighbouring-input samples → an ε lower bound."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpbandits.audit.bounds import (
    EpsilonBound,
    check_confidence,
    epsilon_lower_bound,
    format_epsilon,
)
from dpbandits.errors import ConfigError
from dpbandits.seeding import stable_key

ACCOUNTING_MODES = ("strict", "paper")
DEFAULT_OPTIONS: dict[str, Any] = {"accounting": "strict", "noise_scale": 1.0}


@dataclass(frozen=True)
class AuditSamples:
    """Scalar distinguisher outputs on the two neighbouring inputs, and the ε, δ claimed there."""

    scores0: np.ndarray
    scores1: np.ndarray
    claimed_epsilon: float
    delta: float
    pair: str
    statistic: str
    info: dict[str, float] = field(default_factory=dict)


Sampler = Callable[..., AuditSamples]


@dataclass(frozen=True)
class AuditSpec:
    """A registered audit: how to sample it, its kind, its default number of runs per input."""

    name: str
    kind: str
    sampler: Sampler
    default_runs: int
    description: str
    options: tuple[str, ...] = ("accounting", "noise_scale")
    needs: tuple[str, ...] = ()


AUDITS: dict[str, AuditSpec] = {}


def register_audit(
    name: str,
    kind: str,
    default_runs: int,
    description: str,
    options: tuple[str, ...] = ("accounting", "noise_scale"),
    needs: tuple[str, ...] = (),
) -> Callable[[Sampler], Sampler]:
    """Decorator: make `sampler(epsilon, delta, runs, rng, **options)` available as `name`."""

    def wrap(fn: Sampler) -> Sampler:
        if name in AUDITS:
            raise TypeError(f"audit {name!r} registered twice")
        AUDITS[name] = AuditSpec(name, kind, fn, default_runs, description, options, needs)
        return fn

    return wrap


def load_all() -> None:
    """Import the audit modules so that every audit is registered."""
    import dpbandits.audit.algorithms  # noqa: F401
    import dpbandits.audit.mechanisms  # noqa: F401


def available() -> dict[str, AuditSpec]:
    """Every audit whose mechanism or policy exists in this source tree."""
    load_all()
    out = {}
    for name, spec in sorted(AUDITS.items()):
        if all(_module_exists(module) for module in spec.needs):
            out[name] = spec
    return out


def _module_exists(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


@dataclass(frozen=True)
class AuditResult:
    """One audit's verdict: the empirical ε lower bound next to the claimed ε."""

    name: str
    kind: str
    accounting: str
    claimed_epsilon: float
    delta: float
    runs: int
    seed: int
    noise_scale: float
    bound: EpsilonBound
    pair: str
    statistic: str
    seconds: float
    info: dict[str, float] = field(default_factory=dict)

    @property
    def violated(self) -> bool:
        """True when the lower confidence bound on ε exceeds the claimed ε."""
        return self.bound.epsilon_lb > self.claimed_epsilon * (1.0 + 1e-12)

    def summary(self) -> str:
        b = self.bound
        level = f"{100 * b.confidence:g}%"
        lb, ub = format_epsilon(b.epsilon_lb), format_epsilon(b.epsilon_ub)
        return (
            f"{self.name} [{self.accounting}]: claimed ε = {format_epsilon(self.claimed_epsilon)}"
            f" (δ = {self.delta:.3g}); empirical ε ≥ {format_epsilon(b.epsilon_lb)} at {level}"
            f" confidence, interval [{lb}, {ub}]"
            f", point estimate {format_epsilon(b.epsilon_hat)}; {self.runs} runs per input"
        )

    def row(self) -> dict[str, Any]:
        """Flat record for the audit table."""
        b = self.bound
        return {
            "audit": self.name,
            "kind": self.kind,
            "accounting": self.accounting,
            "claimed_epsilon": self.claimed_epsilon,
            "delta": self.delta,
            "epsilon_lb": b.epsilon_lb,
            "epsilon_hat": b.epsilon_hat,
            "epsilon_ub": b.epsilon_ub,
            "confidence": b.confidence,
            "fpr": b.fpr,
            "fnr": b.fnr,
            "runs": self.runs,
            "noise_scale": self.noise_scale,
            "violated": self.violated,
            "pair": self.pair,
            "statistic": self.statistic,
            "seconds": self.seconds,
            "transcript_changed": self.info.get("transcript_changed"),
        }


def _check_positive(name: str, value: Any, integer: bool = False) -> None:
    ok = isinstance(value, int | float | np.number) and not isinstance(value, bool)
    ok = ok and math.isfinite(value) and value > 0 and (not integer or float(value).is_integer())
    if not ok:
        kind = "an integer >= 1" if integer else "a finite number > 0"
        raise ConfigError(f"{name} = {value!r} is not allowed; must be {kind}")


def run_audit(
    name: str,
    epsilon: float,
    delta: float,
    runs: int | None = None,
    seed: int = 0,
    confidence: float = 0.95,
    accounting: str = "strict",
    noise_scale: float = 1.0,
    **options: Any,
) -> AuditResult:
    """Run audit `name` with `runs` runs per neighbouring input and bound ε from its samples."""
    check_confidence(confidence)
    audits = available()
    if name not in audits:
        raise ConfigError(f"unknown audit {name!r}; allowed: {', '.join(audits)}")
    spec = audits[name]
    _check_positive("epsilon", epsilon)
    if not (isinstance(delta, int | float) and math.isfinite(delta) and 0.0 <= delta < 1.0):
        raise ConfigError(f"delta = {delta!r} is not allowed; must be in [0, 1)")
    runs = spec.default_runs if runs is None else runs
    _check_positive("runs", runs, integer=True)
    if runs < 8:
        raise ConfigError(f"runs = {runs!r} is not allowed; must be an integer >= 8")
    _check_positive("noise_scale", noise_scale)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ConfigError(f"seed = {seed!r} is not allowed; must be an integer >= 0")
    if accounting not in ACCOUNTING_MODES:
        raise ConfigError(
            f"accounting = {accounting!r} is not allowed; allowed: {', '.join(ACCOUNTING_MODES)}"
        )
    given = {"accounting": accounting, "noise_scale": noise_scale, **options}
    unsupported = sorted(
        k for k, v in given.items()
        if k not in spec.options and (k not in DEFAULT_OPTIONS or v != DEFAULT_OPTIONS[k])
    )
    if unsupported:
        raise ConfigError(
            f"audit {name} does not take option(s) {', '.join(unsupported)}; allowed: "
            f"{', '.join(spec.options) or 'none'}"
        )
    kwargs = {k: v for k, v in given.items() if k in spec.options}
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(stable_key(name),)))
    start = time.perf_counter()
    samples = spec.sampler(float(epsilon), float(delta), int(runs), rng, **kwargs)
    bound = epsilon_lower_bound(samples.scores0, samples.scores1, samples.delta, confidence)
    return AuditResult(
        name=name,
        kind=spec.kind,
        accounting=accounting,
        claimed_epsilon=samples.claimed_epsilon,
        delta=samples.delta,
        runs=int(runs),
        seed=int(seed),
        noise_scale=float(noise_scale),
        bound=bound,
        pair=samples.pair,
        statistic=samples.statistic,
        seconds=time.perf_counter() - start,
        info=dict(samples.info),
    )
