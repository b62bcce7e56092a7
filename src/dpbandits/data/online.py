"""Online, leak-free features of a time-ordered log (docs/realdata.md, "Online features").

Whatever is used at event j comes from events 0 … j − 1 only:

- item factors are refit at the events t_0 < t_1 < … (the cadence: the past grows by the share
  `refit` between two refits, and by at least `refit_min` events): the rank-k SVD of the
  residuals r − μ − b_u − b_i of the events before t_e, the biases those of the same events
  (`biases.static_biases`); items without such an event get zero factors;
- the user vector at event j is folded in from the user's ratings before j onto the current item
  factors (`fold_in: projection`): p = Σ_l res_l q_{i_l} / s, which equals the SVD's own user
  factor U√s at the refit and then grows by one term per rating (`fold_in: none` keeps the
  factor of the last refit);
- before t_0 there are no factors (zero vectors); user and item biases at j are the running
  shrunk means of the events before j (`biases.RunningBiases`, computed by the replay).

Only the first `cover` events are computed (the token `online<p>`: the earliest p %).
"""

from __future__ import annotations

import json
import logging
import math
import time
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import scipy.sparse as sp

from dpbandits.atomic import atomic_output
from dpbandits.data import DataError
from dpbandits.data.biases import static_biases
from dpbandits.data.fitting import FeatureFit
from dpbandits.data.ratings import RatingLog
from dpbandits.data.registry import FOLD_INS, SVD_DEFAULTS
from dpbandits.data.svd import peak_rss_mb, truncated_svd
from dpbandits.jit import jit

log = logging.getLogger(__name__)

REFIT = SVD_DEFAULTS["refit"]
"""Default cadence: refit whenever the past has grown by 10 %."""
REFIT_MIN = SVD_DEFAULTS["refit_min"]
"""Default first refit and least number of events between two refits."""


def refit_points(cover: int, growth: float = REFIT, minimum: int = REFIT_MIN) -> np.ndarray:
    """Event indices of the refits before `cover`: t_0 = minimum, then
    t_{e+1} = max(t_e + minimum, ⌈t_e (1 + growth)⌉)."""
    points = []
    t = minimum
    while t < cover:
        points.append(t)
        t = max(t + minimum, math.ceil(t * (1 + growth)))
    return np.asarray(points, dtype=np.int64)


@jit
def _fold_in(user: np.ndarray, item: np.ndarray, residual: np.ndarray, start: np.ndarray,
             q: np.ndarray, inv_s: np.ndarray, project: bool, out: np.ndarray) -> None:
    """User vectors of the events of one refit period, in order: `start` (users × k, the
    vectors at the refit) plus, with `project`, one term res_l q_{i_l} / s per earlier rating
    of the period."""
    k = q.shape[1]
    for j in range(len(user)):
        u = user[j]
        for c in range(k):
            out[j, c] = start[u, c]
        if project:
            a = item[j]
            for c in range(k):
                start[u, c] += residual[j] * q[a, c] * inv_s[c]


def _refit(log_: RatingLog, t: int, k: int, seed: int, shrinkage: float
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[float, np.ndarray, np.ndarray]]:
    """SVD of the residuals of events 0 … t − 1: (U√s per user, V√s per item, s, biases)."""
    user, item = log_.user[:t], log_.item[:t]
    rating = log_.rating[:t].astype(np.float64)
    biases = static_biases(user, item, rating, log_.n_users, log_.n_items, shrinkage)
    mean, b_user, b_item = biases
    residual = (rating - mean - b_user[user] - b_item[item]).astype(np.float32)
    matrix = sp.csr_matrix((residual, (user, item)), shape=(log_.n_users, log_.n_items))
    u, s, v = truncated_svd(matrix, k, seed)
    u[np.diff(matrix.indptr) == 0] = 0
    v[np.bincount(matrix.indices, minlength=matrix.shape[1]) == 0] = 0
    root = np.sqrt(s)
    return u * root, v * root, s, biases


def build_online(log_: RatingLog, k: int, fit: FeatureFit, svd: dict[str, Any],
                 path: str | Path) -> dict[str, Any]:
    """Compute the online features of the events `fit` covers and write them atomically to
    `path`, one refit at a time: `refit_at` (E,), `item_factors` (E, items, k; a gzip chunk per
    refit), `singular_values` (E, k), `user_vectors` (cover, k), attribute `meta` (JSON)."""
    n = len(log_.user)
    cover = fit.n_fit(n)
    if log_.time is None:
        raise DataError(f"{log_.dataset}: online features need the events' time order, and this "
                        "log has no timestamps; use split<p> features")
    if cover <= 0:
        raise DataError(f"{log_.dataset}: feature fit {fit.token} covers no event of {n}; use a "
                        "larger share")
    fold_in = str(svd["fold_in"])
    if fold_in not in FOLD_INS:
        raise DataError(f"fold_in = {fold_in!r} is not allowed; allowed: {', '.join(FOLD_INS)}")
    start = time.perf_counter()
    points = refit_points(cover, float(svd["refit"]), int(svd["refit_min"]))
    seed, shrinkage = int(svd["seed"]), float(svd["shrinkage"])
    user = log_.user.astype(np.int64)
    item = log_.item.astype(np.int64)
    seconds_svd = 0.0
    with atomic_output(path) as tmp, h5py.File(tmp, "w") as f:
        f.create_dataset("refit_at", data=points)
        factors = f.create_dataset("item_factors", (len(points), log_.n_items, k),
                                   dtype=np.float32, compression="gzip", compression_opts=1,
                                   chunks=(1, log_.n_items, k))
        singular = f.create_dataset("singular_values", (len(points), k), dtype=np.float32)
        vectors = f.create_dataset("user_vectors", (cover, k), dtype=np.float32,
                                   chunks=(min(cover, 8192), k))
        first = int(points[0]) if len(points) else cover
        for lo in range(0, first, 1 << 20):  # before the first refit: no factors
            vectors[lo:min(first, lo + (1 << 20))] = 0.0
        for e, t in enumerate(points):
            stop = int(points[e + 1]) if e + 1 < len(points) else cover
            tick = time.perf_counter()
            p, q, s, (mean, b_user, b_item) = _refit(log_, int(t), k, seed, shrinkage)
            seconds_svd += time.perf_counter() - tick
            factors[e] = q
            singular[e] = s
            residual = (log_.rating[t:stop].astype(np.float64) - mean - b_user[user[t:stop]]
                        - b_item[item[t:stop]])
            inv_s = np.where(s > 0, 1.0 / np.maximum(s, 1e-300), 0.0)
            out = np.empty((stop - int(t), k), dtype=np.float32)
            _fold_in(user[t:stop], item[t:stop], residual, np.ascontiguousarray(p),
                     np.ascontiguousarray(q, dtype=np.float64), inv_s,
                     fold_in == "projection", out)
            vectors[int(t):stop] = out
        meta = {
            "dataset": log_.dataset, "k": k, "fit": fit.token, "center": "biases",
            "seed": seed, "shrinkage": shrinkage, "refit": float(svd["refit"]),
            "refit_min": int(svd["refit_min"]), "fold_in": fold_in, "cover": cover,
            "n_refits": len(points), "n_users": log_.n_users, "n_items": log_.n_items,
            "n_ratings": n, "n_fit": cover, "archives": log_.archives,
            "seconds_svd": seconds_svd, "seconds_total": time.perf_counter() - start,
            "peak_rss_mb": peak_rss_mb(),
        }
        f.attrs["meta"] = json.dumps(meta, sort_keys=True)
    log.info("%s: online rank-%d features of %d events: %d refits (%.1fs of SVD), %.1fs in "
             "all, peak RSS %.0f MB", log_.dataset, k, cover, len(points), seconds_svd,
             meta["seconds_total"], meta["peak_rss_mb"])
    return meta
