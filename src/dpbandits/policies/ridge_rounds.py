"""Rounds of the ridge policies played by the compiled loops of `_ridge` on pre-drawn tables.

`_ridge` is bound here to the scipy LAPACK/BLAS routines that `dpbandits.linalg` and the
policies call, so a round gives the Python round's bits (docs/architecture.md, "Table rounds").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from dpbandits.contract import OutcomeTables
from dpbandits.policies import _ridge
from dpbandits.scipy_kernels import blas, lapack

if TYPE_CHECKING:
    from dpbandits.policies.episodic_zcdp import ZCDPEpisodic, _SwitchingIncrement
    from dpbandits.policies.linear_core import LinearPolicy

TS, UCB = 0, 1  # argmax xᵀ(θ̂ + v·L⁻ᵀz), or argmax xᵀθ̂ + α‖x‖_{A⁻¹}
MEAN_EVERY_ROUND, MEAN_KEPT, MEAN_ONCE = 0, 1, 2  # θ̂ = A⁻¹b each round, as given, or once

_ridge.bind(lapack.dpotrf, lapack.dpotrs, lapack.dtrtrs, blas.dsyr, blas.daxpy, blas.dtrsm,
            blas.dtrsv, np.linalg.LinAlgError)


class Batch(NamedTuple):
    """The open batch of a batched policy: its reward sum s (added to in place), the Poisson
    inclusion of each of its rounds (None: all), its first round and its length B."""

    s: np.ndarray
    include: np.ndarray | None
    start: int
    length: int


class Played(NamedTuple):
    """What a call played: the next round, the rewards added to the batch, and whether the
    batch ended with the last round (then the policy releases it)."""

    t: int
    added: int
    released: bool


def play_rounds(policy: LinearPolicy, tables: OutcomeTables, t: int, action: int, scale: float,
                mean_rule: int, theta: np.ndarray, batch: Batch | None = None) -> Played:
    """Rounds t, t + 1, … of `policy` up to its horizon, the end of its block of exploration
    normals (TS) or its batch's last round; A (and b without a batch) are updated in place,
    θ̂ is written to `theta` unless kept."""
    normals, index = policy.explore_normals.remaining() if action == TS else (None, 0)
    s, include, start, length = batch if batch is not None else (None, None, 0, 0)
    t_next, index, added, released = _ridge.run(
        policy.A, policy.b, theta, tables, t, policy.horizon, action, float(scale), normals,
        index, mean_rule, s, include, start, length, policy.horizon)
    if action == TS:
        policy.explore_normals.i = index
    policy.gram_updated(t_next - t)
    return Played(t_next, added, released)


def play_switching(policy: _SwitchingIncrement, tables: OutcomeTables, t: int) -> tuple[int, bool]:
    """Rounds t, t + 1, … of a frozen switching policy up to its horizon or the round before
    which its switch test must run: (that round, whether a switch is due there)."""
    start = t
    t, policy.in_episode, policy.growth_bound, policy.mass, due = _ridge.run_switching(
        policy.A, policy.s, policy.theta_tilde, policy.factor_tau, tables, t, policy.horizon,
        policy.width_scale, policy.in_episode, policy.growth_bound, policy.mass,
        policy.log_det_tau, policy.log_c, policy.lam)
    policy.gram_updated(t - start)
    return t, due


def play_episodic(policy: ZCDPEpisodic, tables: OutcomeTables, t: int) -> tuple[int, bool]:
    """Rounds t, t + 1, … of zCDP-Episodic up to its horizon or the round at which its episode
    ends: (that round, whether a switch is due there)."""
    start = t
    t, policy.in_episode, due = _ridge.run_episodic(
        policy.A, policy.A_ep, policy.b_ep, policy.theta_tilde, tables, t, policy.horizon,
        policy.alpha, policy.in_episode, policy.log_det_tau, policy.log_c)
    policy.gram_updated(t - start)
    return t, due
