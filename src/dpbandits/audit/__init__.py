"""Empirical privacy audits: ε lower bounds from threshold tests on neighbouring inputs."""

from dpbandits.audit.bounds import EpsilonBound, clopper_pearson, epsilon_lower_bound
from dpbandits.audit.registry import AuditResult, available, run_audit

__all__ = ["AuditResult", "EpsilonBound", "available", "clopper_pearson",
           "epsilon_lower_bound", "run_audit"]
