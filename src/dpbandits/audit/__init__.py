"""Empirical privacy audits: ε lower bounds from threshold tests on neighbouring inputs."""
