"""Non-private references of the AdaPrivate-TS paper: LinUCB and linear Thompson sampling (§5)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from dpbandits.policies.base import register
from dpbandits.policies.linear_core import (
    LinearPolicy,
    check_number,
    cho_solve,
    cholesky,
    solve_lower_t,
    widths,
)


@register
class LinUCB(LinearPolicy):
    """LinUCB (Li et al. 2010), shared θ: score xᵀA⁻¹b + α‖x‖_{A⁻¹}, A and b updated every round."""

    name = "LinUCB"
    defaults: ClassVar[dict[str, Any]] = {**LinearPolicy.defaults, "alpha": 1.0}

    def setup(self) -> None:
        check_number("alpha", self.params["alpha"], 0.0, inclusive=True)
        self.alpha = float(self.params["alpha"])

    def choose(self, t: int, arms: np.ndarray) -> int:
        factor = cholesky(self.A)
        theta = cho_solve(factor, self.b)
        return int((arms @ theta + self.alpha * widths(factor, arms)).argmax())

    def observe(self, t: int, x: np.ndarray, r: float) -> None:
        self.add_to_gram(x)
        self.b += r * x


@register
class LinTS(LinearPolicy):
    """Linear TS (Agrawal & Goyal 2013): θ̃ ~ N(A⁻¹b, v²A⁻¹) each round, a = argmax xᵀθ̃ (§5)."""

    name = "LinTS"
    defaults: ClassVar[dict[str, Any]] = {**LinearPolicy.defaults, "v": 1.0}

    def setup(self) -> None:
        check_number("v", self.params["v"], 0.0)
        self.v = float(self.params["v"])

    def choose(self, t: int, arms: np.ndarray) -> int:
        factor = cholesky(self.A)
        theta = cho_solve(factor, self.b)
        z = self.explore_normals.next()
        sample = theta + self.v * solve_lower_t(factor, z)
        return int((arms @ sample).argmax())

    def observe(self, t: int, x: np.ndarray, r: float) -> None:
        self.add_to_gram(x)
        self.b += r * x
