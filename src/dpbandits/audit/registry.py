"""Audit registry and runner: a named audit → neighbouring-input samples → an ε lower bound → a
verdict (docs/audits.md)."""

from __future__ import annotations

import inspect
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpbandits.audit.bounds import (
    EpsilonBound,
    attainable_bound,
    check_confidence,
    epsilon_lower_bound,
    format_epsilon,
)
from dpbandits.audit.spec import AuditSamples, AuditSpec
from dpbandits.errors import ConfigError
from dpbandits.registry import Registry
from dpbandits.seeding import stable_key

ACCOUNTING_MODES = ("strict", "paper")
ROLES = ("audit", "control")
DEFAULT_OPTIONS: dict[str, Any] = {"accounting": "strict", "noise_scale": 1.0}
VERDICTS = ("ok", "inconclusive", "EXCEEDS CLAIM", "flagged (paper)", "control caught",
            "control MISSED")
FAILING = ("EXCEEDS CLAIM", "control MISSED")


MECHANISMS: Registry[AuditSpec] = Registry("mechanism audit", {
    "gaussian": "dpbandits.audit.mechanisms:GAUSSIAN",
    "laplace": "dpbandits.audit.mechanisms:LAPLACE",
    "shuffle-laplace": "dpbandits.audit.mechanisms:SHUFFLE_LAPLACE",
    "tree": "dpbandits.audit.mechanisms:TREE",
    "counter": "dpbandits.audit.mechanisms:COUNTER",
    "ts-release": "dpbandits.audit.mechanisms:TS_RELEASE",
    "ts-release-amp": "dpbandits.audit.mechanisms:TS_RELEASE_AMP",
    "vector-sum": "dpbandits.audit.mechanisms:VECTOR_SUM",
    "dpsgd": "dpbandits.audit.mechanisms:DPSGD",
})


def available() -> dict[str, AuditSpec]:
    """Every audit by name: the mechanisms' and those the policies declare (`Policy.audits`)."""
    from dpbandits.audit.algorithms import policy_audit_spec, policy_audits

    out = dict(MECHANISMS.items())
    out.update({name: policy_audit_spec(audit) for name, audit in policy_audits().items()})
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class AuditResult:
    """One audit's verdict: the empirical ε lower bound next to the claimed ε.

    `role` is "audit" (an honest mechanism or policy: its bound must not exceed the claim) or
    "control" (deliberately broken, e.g. noise × 0.5: its bound must exceed the claim).
    """

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
    role: str = "audit"
    vacuous: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    attainable: float = math.inf

    @property
    def can_fail(self) -> bool:
        """Whether a perfect distinguisher with these runs would put the bound above the claim."""
        return self.attainable > self.claimed_epsilon * (1.0 + 1e-12)

    @property
    def violated(self) -> bool:
        """True when the lower confidence bound on ε exceeds the claimed ε."""
        return self.bound.epsilon_lb > self.claimed_epsilon * (1.0 + 1e-12)

    @property
    def verdict(self) -> str:
        """ok | inconclusive | EXCEEDS CLAIM | flagged (paper) | control caught | control MISSED."""
        return verdict(self.role, self.accounting, self.violated,
                       self.vacuous or not self.can_fail)

    @property
    def failed(self) -> bool:
        """An honest strict audit exceeds its claim, or a control is missed."""
        return self.verdict in FAILING

    def summary(self) -> str:
        b = self.bound
        level = f"{100 * b.confidence:g}%"
        lb, ub = format_epsilon(b.epsilon_lb), format_epsilon(b.epsilon_ub)
        tag = "" if self.noise_scale == 1.0 else f", noise ×{self.noise_scale:g}"
        return (
            f"{self.name} [{self.accounting}{tag}]: claimed ε = "
            f"{format_epsilon(self.claimed_epsilon)} (δ = {self.delta:.3g}); empirical ε ≥ "
            f"{format_epsilon(b.epsilon_lb)} at {level} confidence, interval [{lb}, {ub}]"
            f", point estimate {format_epsilon(b.epsilon_hat)}; {self.runs} runs per input"
            f"; verdict: {self.verdict}"
        )

    def row(self) -> dict[str, Any]:
        """Flat record for the audit table."""
        b = self.bound
        return {
            "audit": self.name,
            "kind": self.kind,
            "accounting": self.accounting,
            "role": self.role,
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
            "options": ", ".join(f"{k} = {v}" for k, v in sorted(self.options.items())),
            "violated": self.violated,
            "vacuous": self.vacuous,
            "epsilon_lb_attainable": self.attainable,
            "verdict": self.verdict,
            "pair": self.pair,
            "statistic": self.statistic,
            "seconds": self.seconds,
            "transcript_changed": self.info.get("transcript_changed"),
            "ledger_epsilon": self.info.get("ledger_epsilon"),
        }


def verdict(role: str, accounting: str, violated: bool, vacuous: bool) -> str:
    """The verdict of an audit from its role, accounting mode and outcome (`vacuous`: nothing
    observed differs, or the runs are too few for any outcome to exceed the claim)."""
    if role == "control":
        return "control caught" if violated else "control MISSED"
    if violated:
        return "flagged (paper)" if accounting == "paper" else "EXCEEDS CLAIM"
    return "inconclusive" if vacuous else "ok"


def _check_positive(name: str, value: Any, integer: bool = False) -> None:
    ok = isinstance(value, int | float | np.number) and not isinstance(value, bool)
    ok = ok and math.isfinite(value) and value > 0 and (not integer or float(value).is_integer())
    if not ok:
        kind = "an integer >= 1" if integer else "a finite number > 0"
        raise ConfigError(f"{name} = {value!r} is not allowed; must be {kind}")


def _is_vacuous(samples: AuditSamples) -> bool:
    """Nothing observed differs: the pair says so, or every score on both sides is one value."""
    if samples.vacuous:
        return True
    both = np.concatenate([np.ravel(samples.scores0), np.ravel(samples.scores1)])
    return bool(both.size) and bool(np.all(both == both[0]))


def run_audit(
    name: str,
    epsilon: float | None = None,
    delta: float | None = None,
    runs: int | None = None,
    seed: int = 0,
    confidence: float = 0.95,
    accounting: str = "strict",
    noise_scale: float = 1.0,
    role: str | None = None,
    **options: Any,
) -> AuditResult:
    """Run audit `name` with `runs` runs per neighbouring input and bound ε from its samples.

    ε and δ default to the audit's point; `role` defaults to "control" when noise_scale < 1.
    """
    check_confidence(confidence)
    audits = available()
    if name not in audits:
        raise ConfigError(f"unknown audit {name!r}; allowed: {', '.join(audits)}")
    spec = audits[name]
    epsilon = spec.point[0] if epsilon is None else epsilon
    delta = spec.point[1] if delta is None else delta
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
    role = ("control" if noise_scale < 1.0 else "audit") if role is None else role
    if role not in ROLES:
        raise ConfigError(f"role = {role!r} is not allowed; allowed: {', '.join(ROLES)}")
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
    if "confidence" in inspect.signature(spec.sampler).parameters:
        kwargs["confidence"] = confidence
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
        role=role,
        vacuous=_is_vacuous(samples),
        options=dict(options),
        attainable=attainable_bound(bound.n0, bound.n1, samples.delta, confidence),
    )
