"""Link functions μ, μ̇ and potentials b of the GLM reward families (Private-GLM paper, Sec. 4).

Each family is a `kind` (an integer, so that compiled kernels can branch on it) and three
scalar kernels, `mean(kind, z)`, `mean_dot(kind, z)` and `potential(kind, z)` (b' = μ, b'' = μ̇);
`Link.mean`, `Link.dot` and `Link.potential` apply the same kernels to every entry of an array.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpbandits.jit import jit

Array = np.ndarray

LOGISTIC_KIND, PROBIT_KIND, LINEAR_KIND = 0, 1, 2
LINK_KINDS = {"logistic": LOGISTIC_KIND, "probit": PROBIT_KIND, "linear": LINEAR_KIND}

_SQRT_2PI = math.sqrt(2.0 * math.pi)
_SQRT_HALF = math.sqrt(0.5)


@jit
def expit(z: float) -> float:
    """The logistic function 1/(1 + e^{−z}), without overflow for large |z|."""
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@jit
def ndtr(z: float) -> float:
    """The standard normal distribution function Φ(z) = erfc(−z/√2)/2."""
    return 0.5 * math.erfc(-z * _SQRT_HALF)


@jit
def normal_density(z: float) -> float:
    """φ(z) = e^{−z²/2}/√(2π)."""
    return math.exp(-0.5 * z * z) / _SQRT_2PI


@jit
def mean(kind: int, z: float) -> float:
    """μ(z): logistic 1/(1 + e^{−z}), probit Φ(z), linear z."""
    if kind == LOGISTIC_KIND:
        return expit(z)
    if kind == PROBIT_KIND:
        return ndtr(z)
    return z


@jit
def mean_dot(kind: int, z: float) -> float:
    """μ̇(z): logistic μ(1 − μ), probit φ(z), linear 1."""
    if kind == LOGISTIC_KIND:
        p = expit(z)
        return p * (1.0 - p)
    if kind == PROBIT_KIND:
        return normal_density(z)
    return 1.0


@jit
def potential(kind: int, z: float) -> float:
    """b(z) with b' = μ: logistic ln(1 + e^z), probit zΦ(z) + φ(z), linear z²/2."""
    if kind == LOGISTIC_KIND:
        return max(z, 0.0) + math.log1p(math.exp(-abs(z)))
    if kind == PROBIT_KIND:
        return z * ndtr(z) + normal_density(z)
    return 0.5 * z * z


@jit
def mean_values(kind: int, z: float) -> tuple[float, float, float]:
    """(μ(z), μ̇(z), b(z)) at once, Φ(z) and φ(z) evaluated once for probit."""
    if kind == PROBIT_KIND:
        cdf, density = ndtr(z), normal_density(z)
        return cdf, density, z * cdf + density
    return mean(kind, z), mean_dot(kind, z), potential(kind, z)


@jit
def _apply(which: int, kind: int, z: np.ndarray) -> np.ndarray:
    """mean (0), mean_dot (1) or potential (2) of every entry of the 1-d array z."""
    out = np.empty(z.shape[0])
    for i in range(z.shape[0]):
        if which == 0:
            out[i] = mean(kind, z[i])
        elif which == 1:
            out[i] = mean_dot(kind, z[i])
        else:
            out[i] = potential(kind, z[i])
    return out


def _elementwise(which: int, kind: int) -> Callable[[Array], Array]:
    def apply(z: Array) -> Array:
        array = np.asarray(z, dtype=float)
        out = _apply(which, kind, np.ascontiguousarray(array.reshape(-1))).reshape(array.shape)
        return out if array.ndim else out[()]

    return apply


def _log_expit(z: Array) -> Array:
    return -np.logaddexp(0.0, -np.asarray(z, dtype=float))


def _log_ndtr(z: Array) -> Array:
    from scipy.special import log_ndtr

    return log_ndtr(z)


@dataclass(frozen=True)
class Link:
    """A reward family: its kernel `kind`, mean μ, derivative μ̇ and potential b (b' = μ) on
    arrays, sup μ̇ and the reward bound R; the binary families' log μ and log(1 − μ)."""

    name: str
    kind: int
    sup_dot: float
    reward_bound: float
    log_mean: Callable[[Array], Array] | None = None
    log_one_minus_mean: Callable[[Array], Array] | None = None
    binary: bool = True

    @property
    def mean(self) -> Callable[[Array], Array]:
        return _elementwise(0, self.kind)

    @property
    def dot(self) -> Callable[[Array], Array]:
        return _elementwise(1, self.kind)

    @property
    def potential(self) -> Callable[[Array], Array]:
        return _elementwise(2, self.kind)

    def kappa_public(self, S: float) -> float:
        """κ_pub = 1/μ̇(S): the data-independent bound for ‖x‖ ≤ 1, ‖θ*‖ ≤ S.

        docs/glm.md, "Non-linearity constants"; the paper defines κ in its Section 4.1.
        """
        slope = mean_dot(self.kind, float(S))
        return 1.0 / slope if slope > 0.0 else math.inf

    @property
    def kappa_star_public(self) -> float:
        """κ*_pub = 1/sup μ̇ (docs/glm.md, "Non-linearity constants")."""
        return 1.0 / self.sup_dot


LOGISTIC = Link(
    name="logistic",
    kind=LOGISTIC_KIND,
    sup_dot=0.25,
    reward_bound=1.0,
    log_mean=_log_expit,
    log_one_minus_mean=lambda z: _log_expit(-np.asarray(z, dtype=float)),
)
PROBIT = Link(
    name="probit",
    kind=PROBIT_KIND,
    sup_dot=1.0 / _SQRT_2PI,
    reward_bound=1.0,
    log_mean=_log_ndtr,
    log_one_minus_mean=lambda z: _log_ndtr(-np.asarray(z, dtype=float)),
)
LINEAR = Link(
    name="linear",
    kind=LINEAR_KIND,
    sup_dot=1.0,
    reward_bound=1.0,
    binary=False,
)

LINKS: dict[str, Link] = {link.name: link for link in (LOGISTIC, PROBIT, LINEAR)}


def get_link(name: str) -> Link:
    """Look a family up by name, with one clear error for an unknown one."""
    from dpbandits.errors import ConfigError

    try:
        return LINKS[name]
    except KeyError:
        raise ConfigError(
            f"unknown reward family {name!r}; allowed: {', '.join(sorted(LINKS))}"
        ) from None
