"""What the replay knows about a user and an item at a step (docs/realdata.md, "Feature model").

A feature source answers, for events of the log (their index in replay order is their time):
the user's vector and bias at the event, each candidate item's vector and bias at the event,
and whether each is known (has a rating among what the features saw) or falls back to the cold
default (zero vector, zero bias: the population's mean rating). `StaticSource`: factors and
biases fit once (whole, prefix<p>, split<p>); `OnlineSource`: the online features of
`online.py`, with running biases over the events before each step.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from dpbandits.data import DataError
from dpbandits.data.biases import RunningBiases
from dpbandits.data.fitting import FeatureFit, parse_fit
from dpbandits.data.svd import Factors, read_factors

EPOCHS_KEPT = 4
"""Item-factor matrices of an online source kept in memory (the replay moves forward)."""


def feature_meta(path: str | Path) -> dict[str, Any]:
    """The metadata of a features file (static or online), or one DataError line."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: features file does not exist (run the data rules first)")
    with h5py.File(path, "r") as f:
        return json.loads(f.attrs["meta"])


class StaticSource:
    """Factors and biases fit once on a set of events; the same at every step."""

    def __init__(self, factors: Factors, user: np.ndarray, item: np.ndarray) -> None:
        self.factors = factors
        self.fit: FeatureFit = factors.fit
        self.k = factors.k
        self.P = factors.user_factors
        self.Q = factors.item_factors
        self.biased = factors.user_bias is not None and factors.item_bias is not None
        seen = np.ones(len(user), dtype=bool) if factors.fit_events is None \
            else factors.fit_events[: len(user)]
        self.user_known = np.bincount(user[seen], minlength=len(self.P)) > 0
        self.item_known = np.bincount(item[seen], minlength=len(self.Q)) > 0

    def users(self, event: np.ndarray, user: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(vectors (m, k), biases (m,), known (m,)) of the users of events `event`."""
        bias = self.factors.user_bias[user].astype(np.float64) if self.biased \
            else np.zeros(len(user))
        return self.P[user].astype(np.float64), bias, self.user_known[user]

    def items(self, event: np.ndarray, items: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(vectors (m, K, k), biases (m, K), known (m, K)) of items (m, K) at the events."""
        bias = self.factors.item_bias[items].astype(np.float64) if self.biased \
            else np.zeros(items.shape)
        return self.Q[items].astype(np.float64), bias, self.item_known[items]


class OnlineSource:
    """Online features: per-event user vectors, item factors per refit, running biases."""

    def __init__(self, path: Path, user: np.ndarray, item: np.ndarray,
                 rating: np.ndarray) -> None:
        self.path = path
        self.handle = h5py.File(path, "r")
        self.meta = json.loads(self.handle.attrs["meta"])
        self.fit = parse_fit(self.meta["fit"])
        self.k = int(self.meta["k"])
        self.cover = int(self.meta["cover"])
        self.biased = True
        self.refit_at = self.handle["refit_at"][()]
        self.n_users, self.n_items = int(self.meta["n_users"]), int(self.meta["n_items"])
        self.running = RunningBiases(user[: self.cover], item[: self.cover],
                                     rating[: self.cover], self.n_users, self.n_items,
                                     float(self.meta["shrinkage"]))
        self._epochs: dict[int, np.ndarray] = {}

    def close(self) -> None:
        self.handle.close()

    def _check(self, event: np.ndarray) -> None:
        if len(event) and int(event.max()) >= self.cover:
            raise DataError(f"{self.path}: event {int(event.max())} asked for, but these online "
                            f"features cover the earliest {self.cover} events "
                            f"({self.fit.token}); use features covering more of the log "
                            "(online<p> with a larger p, or online)")

    def _vectors(self, event: np.ndarray) -> np.ndarray:
        """Per-event user vectors, read in one slice (events ascending or not)."""
        lo, hi = int(event.min()), int(event.max()) + 1
        block = self.handle["user_vectors"][lo:hi]
        return block[event - lo].astype(np.float64)

    def epoch_factors(self, epoch: int) -> np.ndarray:
        """Item factors of refit `epoch` (float64; zeros before the first refit)."""
        if epoch not in self._epochs:
            if len(self._epochs) >= EPOCHS_KEPT:
                self._epochs.pop(min(self._epochs))
            self._epochs[epoch] = np.zeros((self.n_items, self.k)) if epoch < 0 else \
                self.handle["item_factors"][epoch].astype(np.float64)
        return self._epochs[epoch]

    def epochs(self, event: np.ndarray) -> np.ndarray:
        """The refit each event's item factors come from (−1: before the first)."""
        return np.searchsorted(self.refit_at, event, side="right") - 1

    def users(self, event: np.ndarray, user: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(vectors, biases, known) of the (logged) users of events `event`, from earlier
        events."""
        event = np.asarray(event, dtype=np.int64)
        self._check(event)
        bias, count = self.running.user(event)
        return self._vectors(event) if len(event) else np.zeros((0, self.k)), bias, count > 0

    def items(self, event: np.ndarray, items: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(vectors (m, K, k), biases (m, K), known (m, K)) of items (m, K) at events (m,)."""
        event = np.asarray(event, dtype=np.int64)
        self._check(event)
        epoch = self.epochs(event)
        vectors = np.empty((*items.shape, self.k))
        for e in np.unique(epoch):
            rows = epoch == e
            vectors[rows] = self.epoch_factors(int(e))[items[rows]]
        bias, count = self.running.items(event, items)
        return vectors, bias.reshape(items.shape), count.reshape(items.shape) > 0


def open_features(path: str | Path, user: np.ndarray, item: np.ndarray,
                  rating: np.ndarray) -> StaticSource | OnlineSource:
    """The feature source of a features file, given the log's events (replay order)."""
    path = Path(path)
    meta = feature_meta(path)
    if parse_fit(meta.get("fit", "whole")).mode == "online":
        return OnlineSource(path, user, item, rating)
    return StaticSource(read_factors(path), user, item)
