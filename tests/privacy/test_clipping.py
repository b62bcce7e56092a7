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
