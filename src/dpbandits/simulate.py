"""The runner: a shard spec → one run per trial → a ShardData ready to be written."""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from dpbandits.errors import ConfigError
from dpbandits.instances.registry import build_instance
from dpbandits.params import REQUIRED, Declaration, Param, choice, integer, number, validate
from dpbandits.policies import get_policy_class
from dpbandits.privacy.ledger import ACCOUNTING_MODES
from dpbandits.runner import run_policy
from dpbandits.seeding import policy_rng
from dpbandits.storage import ShardData

log = logging.getLogger(__name__)

FULL_CURVE_MAX_HORIZON = 20_000
N_CHECKPOINTS = 1000
SHARD_SPEC: Declaration = (
    Param("experiment", REQUIRED, "experiment name", ("string",)),
    Param("algorithm", REQUIRED, "algorithm label (its folder name)", ("string",)),
    Param("policy", REQUIRED, "registered algorithm", ("string",)),
    Param("params", {}, "the algorithm's parameters", ("mapping",)),
    number("epsilon", None, "privacy budget ε of a private algorithm", gt=0, nullable=True),
    number("delta", None, "privacy budget δ (confidence δ of a non-private one)", gt=0, lt=1,
           nullable=True),
    choice("accounting", "strict", "strict (the theorem's guarantee) or paper (the authors' "
           "code)", ACCOUNTING_MODES),
    Param("instance", REQUIRED, "instance generator and its keys", ("mapping",)),
    integer("instance_index", REQUIRED, "index in the experiment's instance grid", ge=0),
    Param("trials", REQUIRED, "trial indices", ("integers",), ge=0),
    integer("seed", REQUIRED, "root seed of the experiment", ge=0),
)


def checkpoints_for(horizon: int) -> np.ndarray:
    """1-based rounds at which curves are stored: every round, or 1000 evenly spaced + T."""
    if horizon <= FULL_CURVE_MAX_HORIZON:
        return np.arange(1, horizon + 1, dtype=np.int64)
    points = np.unique(np.ceil(np.linspace(0, horizon, N_CHECKPOINTS + 1)[1:]).astype(np.int64))
    return np.union1d(points, [horizon])


def validate_spec(spec: dict[str, Any]) -> None:
    """Reject a malformed shard spec with one clear line."""
    if not isinstance(spec, dict):
        keys = ", ".join(p.name for p in SHARD_SPEC)
        raise ConfigError(f"shard spec must be a mapping of keys ({keys}); got "
                          f"{type(spec).__name__}")
    validate("shard spec", SHARD_SPEC, spec, kind="key")


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

    def build(trial: int) -> tuple[Any, Any, float]:
        """The trial's environment and policy, and the seconds it took to build them."""
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
        return env, policy, time.perf_counter() - start

    def record(trial: int, policy: Any, result: Any, wall: float) -> None:
        """One trial's checkpointed curves, ledger, diagnostics, events and seconds (`wall`
        and the time taken here)."""
        start = time.perf_counter()
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
        rows["wall"].append(wall + time.perf_counter() - start)
        if progress:
            log.info("%s trial %d: regret %.2f in %.2fs", spec["algorithm"], trial,
                     rows["regret"][-1][-1], rows["wall"][-1])

    for trial in spec["trials"]:  # one at a time: a trial's memory is free before the next
        env, policy, seconds = build(trial)
        result = run_policy(policy, env)
        record(trial, policy, result, seconds + result.wall_time)
        del env, policy, result
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
        provenance=instance.provenance() if hasattr(instance, "provenance") else {},
    )
