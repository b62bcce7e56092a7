"""Rounds of the ridge policies played by the compiled loops of `_ridge` on pre-drawn tables.

`_ridge` is bound here to the scipy LAPACK/BLAS routines that `dpbandits.linalg` and the
policies call, so a round gives the Python round's bits (docs/architecture.md, "Table rounds").
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from dpbandits.contract import OutcomeTables
from dpbandits.policies import _ridge
from dpbandits.policies.linear_core import SNAP_LIMIT
from dpbandits.scipy_kernels import blas, lapack

if TYPE_CHECKING:
    from dpbandits.policies.base import Policy
    from dpbandits.policies.dgs_linucb import DGSLinUCB
    from dpbandits.policies.episodic_zcdp import ZCDPEpisodic, _SwitchingIncrement
    from dpbandits.policies.jdp_linucb import JDPLinUCB
    from dpbandits.policies.linear_core import LinearPolicy

TS, UCB = 0, 1  # argmax xᵀ(θ̂ + v·L⁻ᵀz), or argmax xᵀθ̂ + α‖x‖_{A⁻¹}
MEAN_EVERY_ROUND, MEAN_KEPT, MEAN_ONCE = 0, 1, 2  # θ̂ = A⁻¹b each round, as given, or once
AT_STOP, FLOOR, SNAP = 0, 1, 2  # why `play_tree` returned: see there

_ridge.bind(lapack.dpotrf, lapack.dpotrs, lapack.dtrtrs, blas.dsyr, blas.daxpy, blas.dtrsm,
            blas.dtrsv, lapack.dsyevx, np.linalg.LinAlgError)


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


@contextmanager
def signals_held() -> Iterator[None]:
    """The signals a handler can be set for held back (`_ridge.hold_signals`, in the main thread,
    the only one where Python's handlers run) while a compiled loop releases and the policy
    records its releases: the loop stops between rounds when one arrives, and it is delivered
    on exit, after the records."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = _ridge.hold_signals()
    try:
        yield
    finally:
        _ridge.restore_signals(previous)


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
    """Rounds t, t + 1, … of zCDP-Episodic up to its horizon or a switch the policy must make
    (numpy noise: every switch), the switches made there recorded by the policy: (that round,
    whether a switch is due there)."""
    start = t
    exact = policy.noise.exact
    records = np.empty((policy.horizon - t if exact else 0, 4))
    if exact:  # written in place by the compiled switches: the policy's own copy
        policy.theta_tilde = policy.theta_tilde.copy()
    bit_generator = policy.noise_rng.bit_generator
    with signals_held() if exact else nullcontext():  # numpy noise: no switch made here
        with bit_generator.lock:
            t, policy.in_episode, policy.log_det_tau, made, due, error = _ridge.run_episodic(
                policy.A, policy.A_ep, policy.b_ep, policy.theta_tilde, tables, t,
                policy.horizon, policy.alpha, policy.in_episode, policy.log_det_tau,
                policy.log_c, policy.A_start, policy.b_start, policy.rho,
                bit_generator.capsule if exact else None, records)
        policy.gram_updated(t - start)
        for switch_round, rewards, sensitivity, sigma in records[:made].tolist():
            policy.record_switch(int(switch_round), int(rewards), sensitivity, sigma)
    if error is not None:  # after the releases it made are in the ledger
        raise error
    return t, due


def play_tree(policy: JDPLinUCB, tables: OutcomeTables, t: int, stop: int,
              noise_ops: tuple[np.ndarray, np.ndarray, np.ndarray], theta: np.ndarray
              ) -> tuple[int, int]:
    """Rounds t, t + 1, … of JDP-LinUCB up to `stop`, adding to `policy.released_sum` the
    leaves and the node noises of `noise_ops` (`NoisePlan.rest`): (next round, why). why =
    AT_STOP; FLOOR: before that round, whose V_t the policy must floor; SNAP: after its pull,
    its leaf for the tree's snap."""
    grid = policy.leaf_grid
    return _ridge.run_tree(policy.released_sum, policy.base, policy.lam_theta0, theta, tables,
                           t, stop, policy.alpha, grid, SNAP_LIMIT * grid, *noise_ops)


def play_dgs(policy: DGSLinUCB, tables: OutcomeTables, t: int) -> tuple[int, bool]:
    """Rounds t, t + 1, … of DGS-LinUCB with their releases up to its horizon, the end of its
    block of noise normals (numpy noise) or a round only its `choose` can play: (that round,
    whether the policy must play it)."""
    exact = policy.noise.exact
    normals, index = (None, 0) if exact else policy.noise_normals.remaining()
    bit_generator = policy.noise_rng.bit_generator
    with signals_held():
        with bit_generator.lock:
            t_next, index, releases, sigma, python_round, error = _ridge.run_dgs(
                policy.A, policy.b, policy.theta_work, tables, t, policy.horizon,
                policy.alpha, policy.scale, bit_generator.capsule if exact else None, normals,
                index)
        if not exact:
            policy.noise_normals.i = index
        policy.gram_updated(t_next - t)
        if releases:  # θ̃ of the last round that released
            policy.releases += releases
            policy.last_sigma = sigma
            policy.released = (t + releases - 1, policy.theta_work.copy())
    if error is not None:  # after the releases it made are counted
        raise error
    return t_next, python_round


def play_stretches(policy: Policy, tables: OutcomeTables,
                   stretch: Callable[[OutcomeTables, int], int] | None) -> None:
    """Every round of the tables: from round t, `stretch(tables, t)` plays compiled rounds and
    returns the next one to play, which `select` and `finish_round` then play; without a
    stretch, every round so."""
    t, horizon = 0, len(tables.chosen)
    while t < horizon:
        if stretch is not None:
            t = stretch(tables, t)
        if t < horizon:
            finish_round(policy, tables, t, int(policy.select(t, tables.arms[t])))
            t += 1


def finish_round(policy: Policy, tables: OutcomeTables, t: int, index: int) -> None:
    """Round t's pull of arm `index` recorded in the tables and fed to `policy.update`, as the
    round loop does."""
    reward = float(tables.rewards[t, index])
    tables.chosen[t] = index
    tables.regret[t] = tables.regrets[t, index]
    tables.reward[t] = reward
    policy.update(t, tables.arms[t, index], reward)
