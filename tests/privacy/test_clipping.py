"""Clipping of features into the unit ball and of rewards into [0, 1]."""

from __future__ import annotations

import numpy as np

from dpbandits.privacy.clipping import clip_arms, clip_reward, clip_table


def test_clipping() -> None:
    arms = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    np.testing.assert_allclose(clip_arms(arms), [[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]])
    table = np.stack([arms, 2 * arms])
    np.testing.assert_allclose(clip_table(table)[1], [[0.6, 0.8], [0.6, 0.8], [0, 0]])
    assert clip_reward(1.7) == 1.0 and clip_reward(-0.2) == 0.0 and clip_reward(0.4) == 0.4


def test_a_nan_row_leaves_every_other_row_clipped() -> None:
    """A NaN feature makes its own row NaN, never another row's norm exceed 1."""
    arms = np.array([[np.nan, 0.0], [300.0, 400.0], [0.3, 0.4]])
    clipped = clip_arms(arms)
    assert np.isnan(clipped[0]).all()
    np.testing.assert_allclose(clipped[1:], [[0.6, 0.8], [0.3, 0.4]])
    table = clip_table(np.stack([arms, arms[::-1]]))
    norms = np.sqrt(np.nansum(table**2, axis=2))
    assert norms.max() <= 1.0 + 1e-15
    assert np.isnan(table[0, 0]).all() and np.isnan(table[1, 2]).all()
