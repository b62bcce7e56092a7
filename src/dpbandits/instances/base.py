"""What every policy may know about a problem, and the environment protocol the runner drives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class ProblemInfo:
    """Public description of a bandit problem handed to a policy at construction.

    `kappa`/`kappa_star` are the instance values computed over all T·K arms (what the papers'
    code passes); `kappa_pub`/`kappa_star_pub` are the data-independent bounds (glm spec §1.2).
    """

    family: str
    d: int
    K: int
    horizon: int
    S: float
    R: float = 1.0
    kappa: float = 1.0
    kappa_star: float = 1.0
    kappa_pub: float = 1.0
    kappa_star_pub: float = 1.0


class Environment(Protocol):
    """One trial of an instance: arm sets per round, rewards and pseudo-regret of a pull."""

    info: ProblemInfo

    @property
    def horizon(self) -> int: ...

    def arms(self, t: int) -> np.ndarray:
        """Arm features offered at round t (0-based), shape (K_t, d)."""
        ...

    def pull(self, t: int, index: int) -> tuple[float, float]:
        """Play arm `index` at round t: (realised reward, pseudo-regret of that choice)."""
        ...
