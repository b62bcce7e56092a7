"""Rank-k SVD features of the centred users × items rating matrix.

Observed ratings are centred (by default `biases`: minus the global mean and the shrunk user and
item biases of `biases.py`, which the file keeps as features), the sparse matrix is factorised with
ARPACK (`scipy.sparse.linalg.svds`, float32, fixed starting vector), components are sorted by
decreasing singular value and each sign is fixed so that the largest-|value| entry of the item
vector is positive. Stored factors are P = U√s (users) and Q = V√s (items), so P Qᵀ is the
rank-k reconstruction of the centred matrix (docs/realdata.md, "SVD features"). Only the events of
the feature-fit mode enter the matrix (`fitting.py`); users and items without such events get
zero factors.
"""

from __future__ import annotations

import json
import logging
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import scipy.sparse as sp

from dpbandits.atomic import atomic_output
from dpbandits.data import DataError
from dpbandits.data.biases import SHRINKAGE, static_biases
from dpbandits.data.fitting import WHOLE, FeatureFit, parse_fit
from dpbandits.data.ratings import RatingLog
from dpbandits.data.registry import CENTERINGS

log = logging.getLogger(__name__)
DENSE_SIDE = 4000
"""Largest short side factorised through its Gram matrix rather than by ARPACK."""


@dataclass
class Factors:
    """User and item factors of a rank-k SVD plus how they were made."""

    user_factors: np.ndarray
    item_factors: np.ndarray
    singular_values: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)
    fit_events: np.ndarray | None = None
    user_bias: np.ndarray | None = None
    item_bias: np.ndarray | None = None

    @property
    def k(self) -> int:
        return len(self.singular_values)

    @property
    def fit(self) -> FeatureFit:
        """The feature-fit mode (files written before modes existed were fit on the whole log)."""
        return parse_fit(self.meta.get("fit", "whole"))


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (MB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def centered_matrix(log_: RatingLog, center: str = "global", shrinkage: float = SHRINKAGE
                    ) -> tuple[sp.csr_matrix, float, tuple[np.ndarray, np.ndarray] | None]:
    """users × items float32 CSR of observed ratings minus the centring term, the global mean
    and, for `biases`, the user and item biases.

    `biases`: minus the global mean and the shrunk user and item biases (`biases.py`);
    `global`: minus the mean of all observed ratings; `user`: minus each user's mean; `none`:
    raw ratings.
    """
    rating = log_.rating.astype(np.float64)
    mean = float(rating.mean())
    biases = None
    if center == "biases":
        mean, b_user, b_item = static_biases(log_.user, log_.item, rating, log_.n_users,
                                             log_.n_items, shrinkage)
        values = rating - mean - b_user[log_.user] - b_item[log_.item]
        biases = (b_user, b_item)
    elif center == "global":
        values = rating - mean
    elif center == "user":
        sums = np.bincount(log_.user, weights=rating, minlength=log_.n_users)
        counts = np.bincount(log_.user, minlength=log_.n_users)
        values = rating - (sums / np.maximum(counts, 1))[log_.user]
    elif center == "none":
        values = rating
    else:
        raise DataError(f"center = {center!r} is not allowed; allowed: {', '.join(CENTERINGS)}")
    return log_.matrix(values.astype(np.float32)), mean, biases


def _gram_svd(matrix: sp.spmatrix, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Top-k singular triplets from the eigen-decomposition of the smaller Gram matrix (float64;
    for matrices with a small side, where it is exact to round-off and fast)."""
    wide = matrix.shape[0] <= matrix.shape[1]
    a = matrix.astype(np.float64).tocsr() if wide else matrix.T.astype(np.float64).tocsr()
    gram = (a @ a.T).toarray()
    values, vectors = np.linalg.eigh(gram)
    top = np.argsort(-values, kind="stable")[:k]
    s = np.sqrt(np.maximum(values[top], 0.0))
    left = vectors[:, top]
    right = np.asarray(a.T @ left) / np.where(s > 0, s, 1.0)
    return (left, s, right) if wide else (right, s, left)


def truncated_svd(
    matrix: sp.spmatrix, k: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """U (m×k), s (k, descending), V (n×k) of a sparse matrix; deterministic given the input.

    A matrix with a side of at most DENSE_SIDE goes through its Gram matrix (`_gram_svd`), any
    other through ARPACK (`scipy.sparse.linalg.svds`) from a seeded starting vector."""
    m, n = matrix.shape
    if not 1 <= k < min(m, n):
        raise DataError(f"k = {k} is not allowed for a {m} × {n} matrix; need 1 <= k < {min(m, n)}")
    if min(m, n) <= DENSE_SIDE:
        u, s, v = _gram_svd(matrix, k)
    else:
        v0 = np.random.default_rng(seed).standard_normal(min(m, n)).astype(matrix.dtype)
        from scipy.sparse.linalg import svds  # ARPACK: only where features are fitted

        u, s, vt = svds(matrix, k=k, v0=v0, solver="arpack", return_singular_vectors=True)
        order = np.argsort(-s, kind="stable")
        u, s, v = u[:, order], s[order], vt[order].T
    pivot = np.argmax(np.abs(v), axis=0)
    signs = np.where(v[pivot, np.arange(k)] < 0, -1, 1).astype(v.dtype)
    return np.ascontiguousarray(u * signs), s, np.ascontiguousarray(v * signs)


def featurize(log_: RatingLog, k: int = 50, center: str = "global", seed: int = 0,
              fit: FeatureFit = WHOLE, shrinkage: float = SHRINKAGE) -> Factors:
    """Centre, factorise, and package the rank-k factors with timing and memory; only the
    events `fit` selects enter the matrix (and its centring and biases)."""
    start = time.perf_counter()
    if fit.mode == "online":
        raise DataError("online features are made by data.online.fit_online, not featurize")
    fit_events = fit.mask(len(log_.user), seed)
    if not fit_events.any():
        raise DataError(f"{log_.dataset}: feature fit {fit.token} selects no event of "
                        f"{len(log_.user)}; use a larger share")
    matrix, mean, biases = centered_matrix(
        log_ if fit.mode == "whole" else log_.subset(fit_events), center, shrinkage)
    built = time.perf_counter()
    u, s, v = truncated_svd(matrix, k, seed)
    done = time.perf_counter()
    # users and items without a fit event: exactly zero (ARPACK leaves round-off there)
    u[np.diff(matrix.indptr) == 0] = 0
    v[np.bincount(matrix.indices, minlength=matrix.shape[1]) == 0] = 0
    root = np.sqrt(s).astype(np.float32)
    meta = {
        "dataset": log_.dataset, "k": k, "center": center, "global_mean": mean, "seed": seed,
        "n_users": log_.n_users, "n_items": log_.n_items, "n_ratings": len(log_.user),
        "fit": fit.token, "n_fit": int(fit_events.sum()), "archives": log_.archives,
        "seconds_matrix": built - start, "seconds_svd": done - built,
        "peak_rss_mb": peak_rss_mb(),
    }
    if biases is not None:
        meta["shrinkage"] = shrinkage
    log.info("%s: rank-%d SVD of %d × %d (%d of %d ratings, fit %s): matrix %.1fs, svds %.1fs, "
             "peak RSS %.0f MB, s1 = %.4g, s%d = %.4g", log_.dataset, k, log_.n_users,
             log_.n_items, meta["n_fit"], len(log_.user), fit.token, meta["seconds_matrix"],
             meta["seconds_svd"], meta["peak_rss_mb"], s[0], k, s[-1])
    return Factors((u * root).astype(np.float32), (v * root).astype(np.float32),
                   s.astype(np.float32), meta, fit_events,
                   *(None, None) if biases is None else (b.astype(np.float32) for b in biases))


def write_factors(path: str | Path, factors: Factors) -> None:
    """Write factors to HDF5 atomically (datasets user_factors, item_factors, singular_values,
    fit_events (bool per event: entered the fit); attribute `meta` as JSON)."""
    with atomic_output(path) as tmp, h5py.File(tmp, "w") as f:
        f.create_dataset("user_factors", data=factors.user_factors)
        f.create_dataset("item_factors", data=factors.item_factors)
        f.create_dataset("singular_values", data=factors.singular_values)
        if factors.fit_events is not None:
            f.create_dataset("fit_events", data=factors.fit_events, compression="gzip")
        for name in ("user_bias", "item_bias"):
            if getattr(factors, name) is not None:
                f.create_dataset(name, data=getattr(factors, name))
        f.attrs["meta"] = json.dumps(factors.meta, sort_keys=True)


def read_factors(path: str | Path) -> Factors:
    """Read factors written by `write_factors`."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: features file does not exist (run the data rules first)")
    with h5py.File(path, "r") as f:
        meta = json.loads(f.attrs["meta"])
        if parse_fit(meta.get("fit", "whole")).mode == "online":
            raise DataError(f"{path}: holds online features; read them with "
                            "data.features.open_features")
        return Factors(f["user_factors"][()], f["item_factors"][()], f["singular_values"][()],
                       meta, f["fit_events"][()] if "fit_events" in f else None,
                       *(f[n][()] if n in f else None for n in ("user_bias", "item_bias")))
