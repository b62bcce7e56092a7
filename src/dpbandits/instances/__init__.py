"""Problem instances: synthetic GLM and linear instances, replay environments."""

from dpbandits.instances.base import Environment, ProblemInfo
from dpbandits.instances.glm import GLMInstance

__all__ = ["Environment", "GLMInstance", "ProblemInfo"]
