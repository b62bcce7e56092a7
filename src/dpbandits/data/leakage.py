"""How much the features know about the replayed rewards: the AUC of the rank-k score
s(u, m) = P_u · Q_m (the SVD's reconstruction of the centred rating) as a predictor of the logged
reward, over the replayed events (docs/realdata.md, "Feature modes"). About 0.5 when the
features carry nothing about these events; close to 1 when they were fit on them."""

from __future__ import annotations

import numpy as np

CHUNK = 1 << 18


def feature_scores(user_factors: np.ndarray, item_factors: np.ndarray, user: np.ndarray,
                   item: np.ndarray) -> np.ndarray:
    """s = P_u · Q_m for each event (float64), computed in chunks."""
    out = np.empty(len(user), dtype=np.float64)
    for lo in range(0, len(user), CHUNK):
        hi = min(len(user), lo + CHUNK)
        p = user_factors[user[lo:hi]].astype(np.float64)
        q = item_factors[item[lo:hi]].astype(np.float64)
        out[lo:hi] = np.einsum("ij,ij->i", p, q)
    return out


def midranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks with ties given the mean of their positions."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return ((ends - counts + 1 + ends) / 2.0)[inverse]


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve, P(s₊ > s₋) + ½ P(s₊ = s₋) (Mann–Whitney U / n₊n₋, midranks
    for ties); NaN when only one class is present."""
    positive = np.asarray(labels) > 0
    n_pos = int(positive.sum())
    n_neg = len(positive) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = midranks(np.asarray(scores, dtype=np.float64))
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def score_auc(user_factors: np.ndarray, item_factors: np.ndarray, user: np.ndarray,
              item: np.ndarray, reward: np.ndarray) -> float:
    """AUC of the rank-k score for the rewards of the given events."""
    return auc(feature_scores(user_factors, item_factors, user, item), reward)
