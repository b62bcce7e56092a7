"""The runner: a shard spec → one run per trial → a ShardData ready to be written."""

from __future__ import annotations

import logging
import math
import time
from typing import Any

import numpy as np

from dpbandits.errors import ConfigError
from dpbandits.instances.registry import build_instance
from dpbandits.policies.base import ACCOUNTING_MODES, get_policy_class
from dpbandits.runner import run_policy
from dpbandits.seeding import policy_rng
from dpbandits.storage import ShardData

log = logging.getLogger(__name__)

FULL_CURVE_MAX_HORIZON = 20_000
N_CHECKPOINTS = 1000
SPEC_KEYS = {
    "experiment", "algorithm", "policy", "params", "epsilon", "delta", "accounting",
    "instance", "instance_index", "trials", "seed",
}


def checkpoints_for(horizon: int) -> np.ndarray:
    """1-based rounds at which curves are stored: every round, or 1000 evenly spaced + T."""
    if horizon <= FULL_CURVE_MAX_HORIZON:
        return np.arange(1, horizon + 1, dtype=np.int64)
    points = np.unique(np.ceil(np.linspace(0, horizon, N_CHECKPOINTS + 1)[1:]).astype(np.int64))
    return np.union1d(points, [horizon])


def validate_spec(spec: dict[str, Any]) -> None:
    """Reject a malformed shard spec with one clear line."""
    missing = sorted(SPEC_KEYS - {"params", "accounting", "epsilon", "delta"} - set(spec))
    if missing:
        raise ConfigError(f"shard spec is missing key(s): {', '.join(missing)}")
    unknown = sorted(set(spec) - SPEC_KEYS)
    if unknown:
        raise ConfigError(f"unknown shard spec key(s) {', '.join(unknown)}; "
                          f"allowed: {', '.join(sorted(SPEC_KEYS))}")
    trials = spec["trials"]
    if (not isinstance(trials, list) or not trials
            or not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0
                       for t in trials)):
        raise ConfigError(f"trials = {trials!r} is not allowed; must be a non-empty list of "
                          "integers >= 0")
    seed = spec["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"seed = {seed!r} is not allowed; must be an integer >= 0")
    for key in ("params", "instance"):
        if not isinstance(spec.get(key, {}), dict):
            raise ConfigError(f"{key} = {spec[key]!r} is not allowed; must be a mapping")
    accounting = spec.get("accounting", "strict")
    if accounting not in ACCOUNTING_MODES:
        raise ConfigError(f"accounting = {accounting!r} is not allowed; allowed: "
                          f"{', '.join(ACCOUNTING_MODES)}")
    for key, low, high in (("epsilon", 0.0, None), ("delta", 0.0, 1.0)):
        value = spec.get(key)
        if value is None:
            continue
        ok = (isinstance(value, int | float) and not isinstance(value, bool)
              and math.isfinite(value) and value > low and (high is None or value < high))
        if not ok:
            allowed = f"in ({low}, {high})" if high else f"a finite number > {low}"
            raise ConfigError(f"{key} = {value!r} is not allowed; must be {allowed}")


def run_shard(spec: dict[str, Any], progress: bool = False) -> ShardData:
    """Run every trial of a shard spec and collect the trace (deterministic given the spec)."""
    validate_spec(spec)
    cls = get_policy_class(spec["policy"])
    if cls.private and spec.get("epsilon") is None:
        raise ConfigError(f"algorithm {spec['algorithm']} is private and needs an epsilon")
    instance = build_instance(dict(spec["instance"]))
    horizon = instance.info.horizon
    checkpoints = checkpoints_for(horizon)
    index = checkpoints - 1
    epsilon = spec.get("epsilon") if cls.private else None
    rows: dict[str, list[Any]] = {"regret": [], "reward": [], "wall": [], "ledger": []}
    diagnostics: list[dict[str, float]] = []
    events: dict[int, dict[str, np.ndarray]] = {}
    for trial in spec["trials"]:
        start = time.perf_counter()
        env = instance.environment(trial)
        policy = cls(
            instance.info,
            policy_rng(int(spec["seed"]), trial, spec["algorithm"], epsilon),
            epsilon=epsilon,
            delta=spec.get("delta"),
            accounting=spec.get("accounting", "strict"),
            **spec.get("params", {}),
        )
        result = run_policy(policy, env)
        if result.regret.shape != (horizon,) or result.reward.shape != (horizon,):
            raise RuntimeError(f"{spec['algorithm']} returned a trace of the wrong length")
        rows["regret"].append(np.cumsum(result.regret)[index])
        rows["reward"].append(np.cumsum(result.reward)[index])
        diag = dict(result.diagnostics)
        if policy.ledger is not None:  # finished and checked by the runner
            eps_spent, delta_spent = policy.ledger.spent()
            diag.update(epsilon_spent=eps_spent, delta_spent=delta_spent)
            rows["ledger"].append(policy.ledger.to_json())
        else:
            rows["ledger"].append("")
        diagnostics.append(diag)
        events[trial] = dict(result.events)
        rows["wall"].append(time.perf_counter() - start)
        if progress:
            log.info("%s trial %d: regret %.2f in %.2fs", spec["algorithm"], trial,
                     rows["regret"][-1][-1], rows["wall"][-1])
    names = sorted({k for d in diagnostics for k in d})
    return ShardData(
        spec=spec,
        instance={k: float(v) for k, v in instance.describe().items()},
        trials=np.asarray(spec["trials"], dtype=np.int64),
        checkpoints=checkpoints,
        cum_regret=np.vstack(rows["regret"]),
        cum_reward=np.vstack(rows["reward"]),
        wall_time=np.asarray(rows["wall"]),
        ledger=rows["ledger"],
        diagnostics={n: np.array([d.get(n, np.nan) for d in diagnostics]) for n in names},
        events=events,
    )
