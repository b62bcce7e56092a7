"""Bandit policies: one module per family, one line per algorithm in `POLICIES`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dpbandits.contract import ProblemInfo
from dpbandits.policies.base import BatchedPolicy, Policy
from dpbandits.registry import Registry

__all__ = ["POLICIES", "BatchedPolicy", "Policy", "get_policy_class", "make_policy", "rule_name",
           "rule_source"]

POLICIES: Registry[type[Policy]] = Registry("algorithm", {
    "GLM-UCB": "dpbandits.policies.glm_ucb:GLMUCB",
    "GLOC": "dpbandits.policies.gloc:GLOC",
    "ECOLog": "dpbandits.policies.ecolog:ECOLog",
    "RS-GLinUCB": "dpbandits.policies.rs_glinucb:RSGLinUCB",
    "Private-GLM": "dpbandits.policies.private_glm:PrivateGLM",
    "Shuffle-GLM": "dpbandits.policies.shuffle_glm:ShuffleGLM",
    "PhasedElimination": "dpbandits.policies.elimination:PhasedElimination",
    "LSPhasedElimination": "dpbandits.policies.elimination:LSPhasedElimination",
    "CentralDPElimination": "dpbandits.policies.elimination:CentralDPElimination",
    "LocalDPElimination": "dpbandits.policies.elimination:LocalDPElimination",
    "ShuffleDPElimination": "dpbandits.policies.elimination:ShuffleDPElimination",
    "LinUCB": "dpbandits.policies.linear_ts:LinUCB",
    "LinTS": "dpbandits.policies.linear_ts:LinTS",
    "AdaPrivate-TS": "dpbandits.policies.adaprivate:AdaPrivateTS",
    "AdaPrivate-TS-Amp": "dpbandits.policies.adaprivate:AdaPrivateTSAmp",
    "AdaPrivate-TS-Adaptive": "dpbandits.policies.adaprivate:AdaPrivateTSAdaptive",
    "AdaPrivate-UCB": "dpbandits.policies.adaprivate:AdaPrivateUCB",
    "JDP-LinUCB": "dpbandits.policies.jdp_linucb:JDPLinUCB",
    "DGS-LinUCB": "dpbandits.policies.dgs_linucb:DGSLinUCB",
    "zCDP-Episodic": "dpbandits.policies.episodic_zcdp:ZCDPEpisodic",
    "RarelySwitching-zCDP": "dpbandits.policies.episodic_zcdp:RarelySwitchingZCDP",
    "AdaC-OFUL-zCDP": "dpbandits.policies.episodic_zcdp:AdaCOFULZCDP",
    "Uniform": "dpbandits.policies.uniform:Uniform",
})


def get_policy_class(name: str) -> type[Policy]:
    """The policy class registered as `name` (one error line listing the names otherwise)."""
    return POLICIES.get(name)


def make_policy(name: str, problem: ProblemInfo, rng: np.random.Generator,
                **kwargs: Any) -> Policy:
    """Instantiate a registered policy by name."""
    return get_policy_class(name)(problem, rng, **kwargs)


def rule_source(rule: Callable[..., Any]) -> Callable[..., Any]:
    """The Python function behind a decision or update rule (a compiled kernel's own)."""
    return getattr(rule, "py_func", rule)


def rule_name(rule: Callable[..., Any] | None) -> str:
    """`module:qualname` of a decision or update rule ("none" where a policy names none)."""
    if rule is None:
        return "none"
    function = rule_source(rule)
    return f"{function.__module__}:{function.__qualname__}"
