"""Rank-k SVD features of the centred users × items rating matrix.

Observed ratings are centred (global mean by default), the sparse matrix is factorised with
ARPACK (`scipy.sparse.linalg.svds`, float32, fixed starting vector), components are sorted by
decreasing singular value and each sign is fixed so that the largest-|value| entry of the item
vector is positive. Stored factors are P = U√s (users) and Q = V√s (items), so P Qᵀ is the
rank-k reconstruction of the centred matrix (docs/realdata.md, "SVD features").
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
from scipy.sparse.linalg import svds

from dpbandits.atomic import atomic_output
from dpbandits.data import DataError
from dpbandits.data.ratings import RatingLog

log = logging.getLogger(__name__)


@dataclass
class Factors:
    """User and item factors of a rank-k SVD plus how they were made."""

    user_factors: np.ndarray
    item_factors: np.ndarray
    singular_values: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def k(self) -> int:
        return len(self.singular_values)


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (MB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def centered_matrix(log_: RatingLog, center: str = "global") -> tuple[sp.csr_matrix, float]:
    """users × items float32 CSR of observed ratings minus the centring term.

    `global`: minus the mean of all observed ratings; `user`: minus each user's mean (the
    returned offset is then the global mean, for reference); `none`: raw ratings.
    """
    rating = log_.rating.astype(np.float64)
    mean = float(rating.mean())
    if center == "global":
        values = rating - mean
    elif center == "user":
        sums = np.bincount(log_.user, weights=rating, minlength=log_.n_users)
        counts = np.bincount(log_.user, minlength=log_.n_users)
        values = rating - (sums / np.maximum(counts, 1))[log_.user]
    elif center == "none":
        values = rating
    else:
        raise DataError(f"center = {center!r} is not allowed; allowed: global, user, none")
    return log_.matrix(values.astype(np.float32)), mean


def truncated_svd(
    matrix: sp.spmatrix, k: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """U (m×k), s (k, descending), V (n×k) of a sparse matrix; deterministic given the input."""
    m, n = matrix.shape
    if not 1 <= k < min(m, n):
        raise DataError(f"k = {k} is not allowed for a {m} × {n} matrix; need 1 <= k < {min(m, n)}")
    v0 = np.random.default_rng(seed).standard_normal(min(m, n)).astype(matrix.dtype)
    u, s, vt = svds(matrix, k=k, v0=v0, solver="arpack", return_singular_vectors=True)
    order = np.argsort(-s, kind="stable")
    u, s, v = u[:, order], s[order], vt[order].T
    pivot = np.argmax(np.abs(v), axis=0)
    signs = np.where(v[pivot, np.arange(k)] < 0, -1, 1).astype(v.dtype)
    return np.ascontiguousarray(u * signs), s, np.ascontiguousarray(v * signs)


def featurize(log_: RatingLog, k: int = 50, center: str = "global", seed: int = 0) -> Factors:
    """Centre, factorise, and package the rank-k factors with timing and memory."""
    start = time.perf_counter()
    matrix, mean = centered_matrix(log_, center)
    built = time.perf_counter()
    u, s, v = truncated_svd(matrix, k, seed)
    done = time.perf_counter()
    root = np.sqrt(s).astype(np.float32)
    meta = {
        "dataset": log_.dataset, "k": k, "center": center, "global_mean": mean, "seed": seed,
        "n_users": log_.n_users, "n_items": log_.n_items, "n_ratings": len(log_.user),
        "seconds_matrix": built - start, "seconds_svd": done - built,
        "peak_rss_mb": peak_rss_mb(),
    }
    log.info("%s: rank-%d SVD of %d × %d (%d ratings): matrix %.1fs, svds %.1fs, peak RSS %.0f "
             "MB, s1 = %.4g, s%d = %.4g", log_.dataset, k, log_.n_users, log_.n_items,
             len(log_.user), meta["seconds_matrix"], meta["seconds_svd"], meta["peak_rss_mb"],
             s[0], k, s[-1])
    return Factors((u * root).astype(np.float32), (v * root).astype(np.float32),
                   s.astype(np.float32), meta)


def write_factors(path: str | Path, factors: Factors) -> None:
    """Write factors to HDF5 atomically (datasets user_factors, item_factors, singular_values;
    attribute `meta` as JSON)."""
    with atomic_output(path) as tmp, h5py.File(tmp, "w") as f:
        f.create_dataset("user_factors", data=factors.user_factors)
        f.create_dataset("item_factors", data=factors.item_factors)
        f.create_dataset("singular_values", data=factors.singular_values)
        f.attrs["meta"] = json.dumps(factors.meta, sort_keys=True)


def read_factors(path: str | Path) -> Factors:
    """Read factors written by `write_factors`."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: features file does not exist (run the data rules first)")
    with h5py.File(path, "r") as f:
        return Factors(f["user_factors"][()], f["item_factors"][()], f["singular_values"][()],
                       json.loads(f.attrs["meta"]))
