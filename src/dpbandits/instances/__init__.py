"""Problem instances: synthetic GLM, linear and pool instances, replay environments."""

from dpbandits.contract import ProblemInfo
from dpbandits.instances.glm import GLMInstance

__all__ = ["GLMInstance", "ProblemInfo"]
