"""The feature-score AUC: exact against a brute-force pair count, ties, one class."""

import numpy as np
import pytest

from dpbandits.data.leakage import auc, feature_scores, score_auc


def brute_auc(scores, labels):
    pos, neg = scores[labels > 0], scores[labels <= 0]
    diff = pos[:, None] - neg[None, :]
    return float(((diff > 0) + 0.5 * (diff == 0)).mean())


def test_auc_equals_the_pair_count_with_ties():
    rng = np.random.default_rng(0)
    scores = np.round(rng.standard_normal(300), 1)  # many ties
    labels = (rng.random(300) < 0.4).astype(float)
    assert auc(scores, labels) == pytest.approx(brute_auc(scores, labels), abs=1e-12)
    assert auc(np.arange(6.0), np.array([0, 0, 0, 1, 1, 1])) == 1.0
    assert auc(np.zeros(6), np.array([0, 1, 0, 1, 0, 1])) == 0.5
    assert np.isnan(auc(np.arange(3.0), np.ones(3)))


def test_scores_are_the_rank_k_reconstruction():
    rng = np.random.default_rng(1)
    p, q = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    user, item = np.array([0, 4, 2, 2]), np.array([3, 0, 1, 1])
    np.testing.assert_allclose(feature_scores(p, q, user, item), (p @ q.T)[user, item])
    reward = np.array([1.0, 0.0, 1.0, 0.0])
    assert score_auc(p, q, user, item, reward) == pytest.approx(
        brute_auc((p @ q.T)[user, item], reward))


def test_midranks_match_scipy():
    from scipy.stats import rankdata

    from dpbandits.data.leakage import midranks

    values = np.round(np.random.default_rng(2).standard_normal(500), 1)
    np.testing.assert_array_equal(midranks(values), rankdata(values, method="average"))
