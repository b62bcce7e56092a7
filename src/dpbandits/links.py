"""Link functions μ, μ̇ and potentials b of the GLM reward families (Private-GLM paper, Sec. 4)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpbandits.scipy_kernels import special

expit, log_ndtr, ndtr = special.expit, special.log_ndtr, special.ndtr

Array = np.ndarray

_SQRT_2PI = math.sqrt(2.0 * math.pi)


def _logistic_dot(z: Array) -> Array:
    p = expit(z)
    return p * (1.0 - p)


def _probit_dot(z: Array) -> Array:
    return np.exp(-0.5 * np.square(z)) / _SQRT_2PI


def _logistic_potential(z: Array) -> Array:
    return np.logaddexp(0.0, z)


def _probit_potential(z: Array) -> Array:
    return z * ndtr(z) + np.exp(-0.5 * np.square(z)) / _SQRT_2PI


def _identity(z: Array) -> Array:
    return np.asarray(z, dtype=float)


def _ones(z: Array) -> Array:
    return np.ones_like(np.asarray(z, dtype=float))


def _square_half(z: Array) -> Array:
    return 0.5 * np.square(z)


def _log_expit(z: Array) -> Array:
    return -np.logaddexp(0.0, -z)


@dataclass(frozen=True)
class Link:
    """A reward family: mean μ, derivative μ̇, potential b (b' = μ), sup μ̇ and the reward bound R."""

    name: str
    mean: Callable[[Array], Array]
    dot: Callable[[Array], Array]
    potential: Callable[[Array], Array]
    sup_dot: float
    reward_bound: float
    log_mean: Callable[[Array], Array] | None = None
    log_one_minus_mean: Callable[[Array], Array] | None = None
    binary: bool = True

    def kappa_public(self, S: float) -> float:
        """κ_pub = 1/μ̇(S): the data-independent bound for ‖x‖ ≤ 1, ‖θ*‖ ≤ S.

        docs/glm.md, "Non-linearity constants"; the paper defines κ in its Section 4.1.
        """
        return float(1.0 / self.dot(np.array(S, dtype=float)))

    @property
    def kappa_star_public(self) -> float:
        """κ*_pub = 1/sup μ̇ (docs/glm.md, "Non-linearity constants")."""
        return 1.0 / self.sup_dot


LOGISTIC = Link(
    name="logistic",
    mean=expit,
    dot=_logistic_dot,
    potential=_logistic_potential,
    sup_dot=0.25,
    reward_bound=1.0,
    log_mean=_log_expit,
    log_one_minus_mean=lambda z: _log_expit(-z),
)
PROBIT = Link(
    name="probit",
    mean=ndtr,
    dot=_probit_dot,
    potential=_probit_potential,
    sup_dot=1.0 / _SQRT_2PI,
    reward_bound=1.0,
    log_mean=log_ndtr,
    log_one_minus_mean=lambda z: log_ndtr(-z),
)
LINEAR = Link(
    name="linear",
    mean=_identity,
    dot=_ones,
    potential=_square_half,
    sup_dot=1.0,
    reward_bound=1.0,
    binary=False,
)

LINKS: dict[str, Link] = {link.name: link for link in (LOGISTIC, PROBIT, LINEAR)}
LINK_KINDS = {"logistic": 0, "probit": 1, "linear": 2}  # the compiled kernels' (glm_links.h)


def compiled_dot(link: Link) -> bool:
    """Whether the compiled kernels compute this link's μ̇ as `Link.dot` does: the logistic
    link's `expit` a numpy ufunc (scipy's; a Python wrapper under `SCIPY_ARRAY_API=1`)."""
    return link.name in LINK_KINDS and (link.name != "logistic" or isinstance(expit, np.ufunc))


def compiled_mean(link: Link) -> bool:
    """Whether the compiled kernels compute this link's μ as `Link.mean` does: by its ufunc
    (expit, ndtr), or the identity."""
    return link.name == "linear" or (link.name in LINK_KINDS
                                     and isinstance(link.mean, np.ufunc))


def compiled_mean_ufunc(link: Link) -> np.ufunc | None:
    """What the compiled kernels take for a `compiled_mean` link's μ: its ufunc, or None for
    the identity (linear)."""
    return None if link.name == "linear" else link.mean


def get_link(name: str) -> Link:
    """Look a family up by name, with one clear error for an unknown one."""
    from dpbandits.errors import ConfigError

    try:
        return LINKS[name]
    except KeyError:
        raise ConfigError(
            f"unknown reward family {name!r}; allowed: {', '.join(sorted(LINKS))}"
        ) from None
