"""Instance generators by name: a shard spec's `instance` mapping → an instance object.

Each generator is an `InstanceKind`: its declared keys (`dpbandits.params`) and a builder.
An instance object has `info` (ProblemInfo), `environment(trial)` (an environment whose reward
noise depends only on the trial, so every algorithm sees the same randomness), and `describe()`
(scalars recorded with the shard and in summary.csv, e.g. kappa).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dpbandits.params import Declaration, validate
from dpbandits.registry import Registry


@dataclass(frozen=True)
class InstanceKind:
    """An instance generator: its declared keys and the builder taking the checked keys."""

    name: str
    parameters: Declaration
    build: Callable[[dict[str, Any]], Any]
    doc: str = ""

    def check(self, keys: dict[str, Any]) -> dict[str, Any]:
        """The keys checked against the declaration, defaults filled in (one error line)."""
        return validate(self.name, self.parameters, keys, kind="instance key")


GENERATORS: Registry[InstanceKind] = Registry("instance generator", {
    "glm_ball": "dpbandits.instances.glm:GLM_BALL",
    "linear_sphere": "dpbandits.instances.linear:LINEAR_SPHERE",
    "logistic_pool": "dpbandits.instances.pool:LOGISTIC_POOL",
    "movielens_replay": "dpbandits.instances.replay:MOVIELENS_REPLAY",
    "jester_replay": "dpbandits.instances.replay:JESTER_REPLAY",
})


def instance_kind(params: dict[str, Any]) -> InstanceKind:
    """The generator an instance mapping names (one error line if unknown)."""
    return GENERATORS.get(params.get("generator"))  # type: ignore[arg-type]


def check_instance(params: dict[str, Any]) -> dict[str, Any]:
    """An instance mapping checked against its generator's declaration (before any job)."""
    kind = instance_kind(params)
    return kind.check({k: v for k, v in params.items() if k != "generator"})


def build_instance(params: dict[str, Any]) -> Any:
    """Build the instance a shard spec describes."""
    kind = instance_kind(params)
    return kind.build(kind.check({k: v for k, v in params.items() if k != "generator"}))
