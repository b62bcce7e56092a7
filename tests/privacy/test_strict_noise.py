"""Strict accounting releases exact discrete noise on a power-of-two grid (safe against the
floating-point attack); paper accounting keeps numpy's floats, which are off any such grid."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from dpbandits.instances.glm import GLMInstance
from dpbandits.instances.registry import build_instance
from dpbandits.policies import make_policy
from dpbandits.policies.elimination import EliminationConfig, _Batcher
from dpbandits.privacy.exact_noise import ExactNoise, NumpyNoise

POOL = {"generator": "logistic_pool", "d": 4, "n_arms": 20, "K": 4, "S": 2.0, "horizon": 120,
        "seed": 5}


def on_grid(values: np.ndarray, step: float) -> bool:
    """Every value is an integer multiple of `step` (and not all zero)."""
    v = np.asarray(values, dtype=float).ravel()
    return bool(np.any(v != 0) and np.all(np.rint(v / step) * step == v))


def _pool_policy(name: str, accounting: str, **params: object):
    inst = build_instance(POOL)
    pol = make_policy(name, inst.info, np.random.default_rng(0), epsilon=1.0, delta=1e-5,
                      accounting=accounting, **params)
    pol.run(inst.environment(0))
    return pol


def _adaprivate(pol) -> tuple[np.ndarray, float]:
    return pol.b - pol.lam * pol.theta0, pol.noise.grid(pol.sigma)


def _episodic(pol) -> tuple[np.ndarray, float]:
    return pol.theta_tilde, pol.noise.grid(pol.sigmas[-1])


def _switching(pol) -> tuple[np.ndarray, float]:
    return pol.b - pol.lam * pol.theta0, pol.noise.grid(pol.sigma)


def _dgs(pol) -> tuple[np.ndarray, float]:
    """A release θ̃ made after the run (the rounds' own leave only θ̂ behind)."""
    pol.choose(pol.horizon, np.zeros((1, pol.d)))
    return pol.theta, pol.noise.grid(pol.last_sigma)


def _jdp(pol) -> tuple[np.ndarray, float]:
    return pol.released_sum, pol.noise.grid(pol.tree.sigma_node / np.sqrt(2.0))


CASES: dict[str, tuple[dict, Callable]] = {
    "AdaPrivate-TS": ({"B": 10}, _adaprivate),
    "AdaPrivate-UCB": ({"B": 10}, _adaprivate),
    "zCDP-Episodic": ({}, _episodic),
    "RarelySwitching-zCDP": ({}, _switching),
    "DGS-LinUCB": ({}, _dgs),
    "JDP-LinUCB": ({}, _jdp),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_linear_policies_release_on_the_grid_in_strict_mode_only(name: str) -> None:
    params, released = CASES[name]
    values, step = released(_pool_policy(name, "strict", **params))
    assert step > 0 and on_grid(values, step)
    paper = _pool_policy(name, "paper", **params)
    assert isinstance(paper.noise, NumpyNoise)
    values, _ = released(paper)
    assert not on_grid(values, step)  # negative control: float noise is off the grid


@pytest.mark.parametrize("accounting", ["strict", "paper"])
def test_private_glm_trees_carry_grid_noise_in_strict_mode_only(accounting: str) -> None:
    inst = GLMInstance("probit", 3, 5, 2.0, 50, 3)
    pol = make_policy("Private-GLM", inst.info, np.random.default_rng(0), epsilon=4.0,
                      delta=0.02, accounting=accounting)
    pol.run(inst.environment(0))
    grid = ExactNoise(np.random.default_rng(0)).grid
    for tree in (pol.vtree, pol.htree):
        noise = np.stack([tree.node_noise(j) for j in range(1, 9)])
        assert on_grid(noise, grid(tree.sigma_node / np.sqrt(2.0))) == (accounting == "strict")
    assert on_grid(pol.htree._prefix, grid(pol.htree.sigma_node)) == (accounting == "strict")


@pytest.mark.parametrize("mode", ["central", "local"])
def test_elimination_sums_are_snapped_and_discrete_in_strict_mode(mode: str) -> None:
    counts = np.array([5, 7])
    for exact in (True, False):
        noise = ExactNoise(np.random.default_rng(2)) if exact else None
        cfg = EliminationConfig(mode=mode, horizon=100, d=2, sigma=1.0, epsilon=1.0,
                                delta=1e-6, sensitivity=2.0, clip=1.0, explicit=True,
                                noise=noise)
        batcher = _Batcher(cfg, np.array([0.3, -0.2]), 1.0, np.random.default_rng(1),
                           np.random.default_rng(2))
        scale = 2.0
        _, _, _, noisy = batcher.play(np.array([0, 1]), counts, scale)
        step = ExactNoise(np.random.default_rng(0)).grid(scale)
        assert on_grid(noisy, step) == exact
