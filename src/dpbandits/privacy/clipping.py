"""Clipping that bounds what one record can change: features into the unit ball, rewards into
[0, 1] (the sensitivities of the mechanisms assume both)."""

from __future__ import annotations

import numpy as np

from dpbandits.jit import jit


def clip_arms(arms: np.ndarray) -> np.ndarray:
    """x ← x / max(1, ‖x‖) row-wise: every feature vector in the unit ball."""
    arms = np.asarray(arms, dtype=float)
    norms = np.sqrt(np.einsum("ij,ij->i", arms, arms))
    if (norms > 1.0).any():  # not norms.max(): one NaN row would leave every other unclipped
        arms = arms / np.maximum(norms, 1.0)[:, None]
    return arms


def clip_table(table: np.ndarray) -> np.ndarray:
    """clip_arms applied to every round of a (T, K, d) table at once."""
    table = np.asarray(table, dtype=float)
    norms = np.sqrt(np.einsum("tkj,tkj->tk", table, table))
    if (norms > 1.0).any():
        table = table / np.maximum(norms, 1.0)[:, :, None]
    return table


@jit
def clip_reward(r: float) -> float:
    """r ← min(max(r, 0), 1): rewards in [0, 1]."""
    return min(max(r, 0.0), 1.0)
