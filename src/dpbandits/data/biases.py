"""User and item effects of the feature model (docs/realdata.md, "Feature model").

Over a set of past events with mean rating μ, the bias of a user (or item) with n past ratings
summing to S is the shrunk mean deviation b = (S − n μ) / (n + λ): 0 for a user or item without
past ratings (the cold fallback: the population's mean rating), close to its own mean deviation
once n ≫ λ. `static_biases` computes them over a fixed set of events (the fit events of the
whole, prefix and split modes); `RunningBiases` gives them at any event of a time-ordered log,
over the events strictly before it (the online mode), each sum taken in time order.
"""

from __future__ import annotations

import numpy as np

from dpbandits.data.registry import SVD_DEFAULTS
from dpbandits.jit import jit

SHRINKAGE = float(SVD_DEFAULTS["shrinkage"])
"""λ of the shrunk means (data/svd/shrinkage)."""


def static_biases(user: np.ndarray, item: np.ndarray, rating: np.ndarray, n_users: int,
                  n_items: int, shrinkage: float = SHRINKAGE
                  ) -> tuple[float, np.ndarray, np.ndarray]:
    """μ and the shrunk user and item biases (float64) over the given events."""
    rating = np.asarray(rating, dtype=np.float64)
    mean = float(rating.mean()) if len(rating) else 0.0
    out = []
    for index, size in ((user, n_users), (item, n_items)):
        count = np.bincount(index, minlength=size).astype(np.float64)
        total = np.bincount(index, weights=rating, minlength=size)
        out.append((total - count * mean) / (count + shrinkage))
    return mean, out[0], out[1]


@jit
def _logged(user: np.ndarray, item: np.ndarray, rating: np.ndarray, n_users: int,
            n_items: int, shrinkage: float, out: np.ndarray) -> None:
    """Row j of `out`: μ, the user's bias and count, the item's bias and count, over the
    events before j (sums in time order)."""
    user_n = np.zeros(n_users)
    user_s = np.zeros(n_users)
    item_n = np.zeros(n_items)
    item_s = np.zeros(n_items)
    total = 0.0
    for j in range(len(user)):
        mean = total / j if j > 0 else 0.0
        u, a = user[j], item[j]
        out[j, 0] = mean
        out[j, 1] = (user_s[u] - user_n[u] * mean) / (user_n[u] + shrinkage)
        out[j, 2] = user_n[u]
        out[j, 3] = (item_s[a] - item_n[a] * mean) / (item_n[a] + shrinkage)
        out[j, 4] = item_n[a]
        user_n[u] += 1.0
        user_s[u] += rating[j]
        item_n[a] += 1.0
        item_s[a] += rating[j]
        total += rating[j]


@jit
def _items_at(event: np.ndarray, items: np.ndarray, item: np.ndarray, rating: np.ndarray,
              mean: np.ndarray, shrinkage: float, done: int, item_n: np.ndarray,
              item_s: np.ndarray, bias: np.ndarray, count: np.ndarray) -> int:
    """Biases and counts of `items` (m, K) at the ascending events (m,), the per-item sums
    (`item_n`, `item_s`, over events before `done`) advanced in time order; the new `done`."""
    for s in range(len(event)):
        while done < event[s]:
            item_n[item[done]] += 1.0
            item_s[item[done]] += rating[done]
            done += 1
        mu = mean[event[s]]
        for c in range(items.shape[1]):
            a = items[s, c]
            bias[s, c] = (item_s[a] - item_n[a] * mu) / (item_n[a] + shrinkage)
            count[s, c] = item_n[a]
    return done


class RunningBiases:
    """Biases at any event of a time-ordered log, over the events before it: the logged user's
    and item's at every event (one pass), and any items' at ascending events (per-item sums
    advanced as the events advance, restarted when they go back)."""

    def __init__(self, user: np.ndarray, item: np.ndarray, rating: np.ndarray, n_users: int,
                 n_items: int, shrinkage: float = SHRINKAGE) -> None:
        self.shrinkage = float(shrinkage)
        self.item_index = np.ascontiguousarray(item, dtype=np.int64)
        self.rating = np.ascontiguousarray(rating, dtype=np.float64)
        self.logged = np.empty((len(user), 5))
        _logged(np.ascontiguousarray(user, dtype=np.int64), self.item_index, self.rating,
                n_users, n_items, self.shrinkage, self.logged)
        self.mean = np.ascontiguousarray(self.logged[:, 0])
        self._done = 0
        self._n = np.zeros(n_items)
        self._s = np.zeros(n_items)

    def user(self, event: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(bias, number of earlier ratings) of the logged user of each event."""
        return self.logged[event, 1], self.logged[event, 2]

    def logged_item(self, event: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(bias, number of earlier ratings) of the logged item of each event."""
        return self.logged[event, 3], self.logged[event, 4]

    def items(self, event: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(bias, number of earlier ratings) of items (m, K) at events (m,)."""
        event = np.ascontiguousarray(event, dtype=np.int64)
        items = np.ascontiguousarray(items, dtype=np.int64).reshape(len(event), -1)
        order = np.argsort(event, kind="stable")
        if len(event) and int(event[order[0]]) < self._done:
            self._done = 0
            self._n[:] = 0.0
            self._s[:] = 0.0
        bias = np.empty(items.shape)
        count = np.empty(items.shape)
        self._done = _items_at(event[order], items[order], self.item_index, self.rating,
                               self.mean, self.shrinkage, self._done, self._n, self._s,
                               bias, count)
        out_bias, out_count = np.empty_like(bias), np.empty_like(count)
        out_bias[order], out_count[order] = bias, count
        return out_bias, out_count
