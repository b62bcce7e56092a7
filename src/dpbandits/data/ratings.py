"""Parsed ratings: raw ids → dense indices, duplicates resolved, sorted by time, in HDF5.

File layout (`ratings.h5`): datasets `user`, `item` (int32 dense indices), `rating` (float32),
`time` (int64, only when the source has timestamps), `user_ids`, `item_ids` (int64 raw ids, index
→ id), optional `item_titles` (strings); attributes `dataset`, `n_users`, `n_items`,
`n_ratings`, `order` ("time" or "file"), `sources` (JSON list of parsed files), `archives` (JSON
list of the verification stamps of the archives read: file, sha256, bytes, pinned).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import scipy.sparse as sp

from dpbandits.atomic import atomic_output
from dpbandits.data import DataError


@dataclass
class RawRatings:
    """Ratings as read from the source files, in file order, with raw ids."""

    user: np.ndarray
    item: np.ndarray
    rating: np.ndarray
    time: np.ndarray | None = None
    titles: dict[int, str] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)


@dataclass
class RatingLog:
    """Dense-indexed ratings, one per (user, item), in replay order (time, then file order)."""

    dataset: str
    user: np.ndarray
    item: np.ndarray
    rating: np.ndarray
    time: np.ndarray | None
    user_ids: np.ndarray
    item_ids: np.ndarray
    item_titles: list[str] | None = None
    sources: list[str] = field(default_factory=list)
    archives: list[dict[str, Any]] = field(default_factory=list)

    @property
    def n_users(self) -> int:
        return len(self.user_ids)

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    def matrix(self, values: np.ndarray | None = None, dtype: type = np.float32) -> sp.csr_matrix:
        """users × items CSR matrix of `values` (default the ratings) at the observed cells."""
        data = self.rating if values is None else values
        return sp.csr_matrix(
            (np.asarray(data, dtype=dtype), (self.user, self.item)),
            shape=(self.n_users, self.n_items),
        )

    def subset(self, rows: np.ndarray) -> RatingLog:
        """The events selected by a boolean mask or index array, with the same users and items
        (so that factors of the subset index like those of the whole log)."""
        return replace(self, user=self.user[rows], item=self.item[rows],
                       rating=self.rating[rows],
                       time=None if self.time is None else self.time[rows])


def build_log(dataset: str, raw: RawRatings) -> RatingLog:
    """Factorize ids (sorted), keep the last rating of a repeated (user, item) pair in file
    order, then sort stably by time when timestamps exist."""
    n = len(raw.user)
    if n == 0:
        raise DataError(f"{dataset}: no ratings were parsed from {', '.join(raw.sources)}")
    user_ids, user = np.unique(raw.user, return_inverse=True)
    item_ids, item = np.unique(raw.item, return_inverse=True)
    user = user.astype(np.int32)
    item = item.astype(np.int32)
    key = user.astype(np.int64) * len(item_ids) + item
    # last occurrence of each pair: unique on the reversed keys gives first-in-reverse
    _, first_rev = np.unique(key[::-1], return_index=True)
    keep = np.sort(n - 1 - first_rev)
    del key, first_rev
    if len(keep) == n:
        keep = None
    time = raw.time
    if time is not None:
        order = np.argsort(time if keep is None else time[keep], kind="stable")
        if keep is not None:
            order = keep[order]
    else:
        order = keep
    def take(a: np.ndarray) -> np.ndarray:
        return a if order is None else a[order]
    titles = None
    if raw.titles:
        titles = [raw.titles.get(int(i), "") for i in item_ids]
    return RatingLog(
        dataset=dataset,
        user=take(user),
        item=take(item),
        rating=take(np.asarray(raw.rating, dtype=np.float32)),
        time=None if time is None else take(np.asarray(time, dtype=np.int64)),
        user_ids=user_ids.astype(np.int64),
        item_ids=item_ids.astype(np.int64),
        item_titles=titles,
        sources=list(raw.sources),
    )


def write_log(path: str | Path, log: RatingLog) -> None:
    """Write a RatingLog to HDF5 atomically."""
    with atomic_output(path) as tmp, h5py.File(tmp, "w") as f:
        f.attrs.update(dataset=log.dataset, n_users=log.n_users, n_items=log.n_items,
                       n_ratings=len(log.user), order="file" if log.time is None else "time",
                       sources=json.dumps(log.sources),
                       archives=json.dumps(log.archives, sort_keys=True))
        for name in ("user", "item", "rating", "user_ids", "item_ids"):
            f.create_dataset(name, data=getattr(log, name))
        if log.time is not None:
            f.create_dataset("time", data=log.time)
        if log.item_titles is not None:
            f.create_dataset("item_titles", data=np.array(log.item_titles, dtype=object),
                             dtype=h5py.string_dtype())


def read_log(path: str | Path, rows: slice | None = None) -> RatingLog:
    """Read a ratings file (optionally only a slice of its events)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: ratings file does not exist (run the data rules first)")
    sel = rows if rows is not None else slice(None)
    with h5py.File(path, "r") as f:
        titles = None
        if "item_titles" in f:
            titles = [t.decode() if isinstance(t, bytes) else str(t) for t in f["item_titles"][()]]
        return RatingLog(
            dataset=str(f.attrs["dataset"]),
            user=f["user"][sel],
            item=f["item"][sel],
            rating=f["rating"][sel],
            time=f["time"][sel] if "time" in f else None,
            user_ids=f["user_ids"][()],
            item_ids=f["item_ids"][()],
            item_titles=titles,
            sources=json.loads(f.attrs["sources"]),
            archives=json.loads(f.attrs.get("archives", "[]")),
        )
