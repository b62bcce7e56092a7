"""Replay environments on rating logs (Li et al. 2011): `movielens_replay`, `jester_replay`.

The protocol and our choices: docs/realdata.md, "Replay", and docs/ts.md, "Replay protocol".

Each replay step is one logged rating (u, m, r) in time order (Jester, which has no timestamps:
a per-trial random order). Its candidate set is m plus K−1 other items drawn uniformly (or from
the items u rated), with m at a uniformly random position. The step counts only when the policy
picks m; the reward is 1[r ≥ 4] (MovieLens) or 1[r > 0] (Jester). Arm features are the unit
vectors of P_u ⊙ Q_a (or [P_u; Q_a]) from the rank-k SVD factors. Candidate draws and the Jester
order come from `reward_rng(seed, trial)`, so every algorithm sees the same trial. Events the
features were fit on are never replayed in a leak-free feature mode (docs/realdata.md, "Feature
modes"); the instance records the archives it came from and the feature-score AUC.

Such a log has no pseudo-regret: the per-round regret trace is 0 and the metric is the CTR of
the counted rounds. The runner drives a policy through the replay (select on every step, update
only on counted steps); the accept rate and CTR go into the diagnostics.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from dpbandits.contract import ProblemInfo, ReplayEnvironment
from dpbandits.data import DataError
from dpbandits.data.leakage import score_auc
from dpbandits.data.provenance import shard_provenance
from dpbandits.data.svd import Factors, read_factors
from dpbandits.errors import ConfigError
from dpbandits.instances.registry import InstanceKind
from dpbandits.params import (
    REQUIRED,
    Declaration,
    Param,
    boolean,
    choice,
    integer,
    number,
    validate,
    with_defaults,
)
from dpbandits.seeding import reward_rng

log = logging.getLogger(__name__)

FEATURE_MAPS = ("product", "concat")
NORMALIZATIONS = ("unit", "clip")
CANDIDATES = ("uniform", "rated")
ORDERS = ("time", "shuffle")
CHUNK = 8192
WARM_CHUNK = 1 << 18

REPLAY_KEYS: Declaration = (
    Param("ratings", REQUIRED, "the rating log (HDF5, written by the data rules)", ("string",)),
    Param("features", REQUIRED, "the SVD factors (HDF5)", ("string",)),
    Param("requires", REQUIRED, "files the shard job depends on (ratings and features)",
          ("strings",)),
    integer("horizon", REQUIRED, "counted rounds T", ge=1),
    Param("dataset", None, "dataset name (recorded)", ("string", "null")),
    integer("d", None, "expected feature dimension (null: from the factors)", ge=1,
            nullable=True),
    integer("K", 3, "candidate-set size", ge=2),
    integer("seed", 0, "seed of the candidate draws (and Jester's order)", ge=0),
    choice("candidates", "uniform", "other candidates: uniform over items, or items the user "
           "rated", CANDIDATES),
    choice("feature_map", "product", "x = P_u ⊙ Q_a (product) or [P_u; Q_a] (concat)",
           FEATURE_MAPS),
    choice("normalize", "unit", "features scaled to unit norm, or clipped into the unit ball",
           NORMALIZATIONS),
    number("ridge", 1.0, "ridge λ of the warm-start fit", gt=0),
    integer("max_steps", None, "replay steps available (null: the whole log)", ge=1,
            nullable=True),
    number("S", 1.0, "norm bound S passed to the policies", gt=0),
    Param("family", "linear", "reward family passed to the policies", ("string",)),
    number("threshold", 4.0, "reward 1[rating ≥ threshold] (inclusive) or 1[rating > threshold]"),
    boolean("inclusive", True, "the threshold counts as a click"),
    number("warm_start", 0.1, "share of the earliest events used for the warm start", ge=0,
           lt=1),
    choice("order", "time", "replay in time order or shuffled per trial", ORDERS),
)
JESTER_KEYS = with_defaults(REPLAY_KEYS, threshold=0.0, inclusive=False, warm_start=0.0,
                            order="shuffle")


def arm_features(user_vec: np.ndarray, item_vecs: np.ndarray, feature_map: str,
                 normalize: str) -> np.ndarray:
    """Rows x_a = P_u ⊙ Q_a (or [P_u; Q_a]) scaled to unit norm (or clipped into the unit ball)."""
    if feature_map == "product":
        x = item_vecs.astype(np.float64) * user_vec.astype(np.float64)
    else:
        x = np.concatenate([np.broadcast_to(user_vec, item_vecs.shape), item_vecs],
                           axis=-1).astype(np.float64)
    norms = np.sqrt(np.einsum("...j,...j->...", x, x))[..., None]
    scale = np.where(norms > 0, norms, 1.0) if normalize == "unit" else np.maximum(norms, 1.0)
    return x / scale


class ReplayInstance:
    """A rating log with SVD factors, ready to replay; one `environment(trial)` per trial."""

    def __init__(self, kind: str, params: dict[str, Any]) -> None:
        keys = JESTER_KEYS if kind == "jester_replay" else REPLAY_KEYS
        p = validate(kind, keys, params, kind="instance key")
        self.kind = kind
        self.params = p
        self.horizon, self.K, self.seed = p["horizon"], p["K"], p["seed"]
        self.candidates, self.feature_map = p["candidates"], p["feature_map"]
        self.normalize, self.order = p["normalize"], p["order"]
        self.threshold = float(p["threshold"])
        self.inclusive = p["inclusive"]
        self.warm_start = float(p["warm_start"])
        self.ridge = float(p["ridge"])
        self.S = float(p["S"])
        self.max_steps = p["max_steps"]
        self.ratings_path, self.features_path = Path(p["ratings"]), Path(p["features"])
        requires = p["requires"]
        if not {str(self.ratings_path),
                                                  str(self.features_path)} <= {
                                                      str(Path(r)) for r in requires}:
            raise ConfigError(f"requires = {requires!r} is not allowed; must list the ratings "
                              f"({p['ratings']}) and features ({p['features']}) files")
        self._load()

    def _load(self) -> None:
        factors = read_factors(self.features_path)
        self.P = factors.user_factors
        self.Q = factors.item_factors
        k = factors.k
        self.d = k if self.feature_map == "product" else 2 * k
        if self.params["d"] is not None and self.params["d"] != self.d:
            raise ConfigError(f"d = {self.params['d']!r} is not allowed; the {self.feature_map} "
                              f"features of {self.features_path} have d = {self.d}")
        if not self.ratings_path.is_file():
            raise DataError(f"{self.ratings_path}: ratings file does not exist (run the data "
                            "rules first)")
        with h5py.File(self.ratings_path, "r") as f:
            n = int(f.attrs["n_ratings"])
            if (int(f.attrs["n_users"]), int(f.attrs["n_items"])) != (len(self.P), len(self.Q)):
                raise DataError(f"{self.features_path} does not match {self.ratings_path} "
                                "(different numbers of users or items); rebuild the features")
            self.n_items = len(self.Q)
            if self.K > self.n_items:
                raise ConfigError(f"K = {self.K} is not allowed; must be <= {self.n_items} items")
            self.dataset = str(f.attrs["dataset"])
            self.archives = json.loads(f.attrs.get("archives", "[]"))
            self._check_features(factors, n)
            n_warm = int(math.floor(self.warm_start * n))
            rows = self._replay_rows(factors, n, n_warm)
            self.theta0 = self._warm_theta(f, n_warm) if n_warm else None
            self.n_warm = n_warm
            if isinstance(rows, slice):
                self.user, self.item = f["user"][rows], f["item"][rows]
                rating = f["rating"][rows]
            else:
                self.user, self.item = f["user"][()][rows], f["item"][()][rows]
                rating = f["rating"][()][rows]
            if self.candidates == "rated":
                self._rated_index(f["user"][()], f["item"][()])
        self.reward = self._rewards(rating)
        self.feature_auc = score_auc(self.P, self.Q, self.user, self.item, self.reward)
        self.feature_coverage = float(np.mean(self.P.any(axis=1)[self.user]
                                              & self.Q.any(axis=1)[self.item]))

    def _check_features(self, factors: Factors, n: int) -> None:
        """The features were made from this very ratings file (same events and archives)."""
        self.fit = factors.fit
        self.n_fit = n if factors.fit_events is None else int(factors.fit_events.sum())
        made_from = factors.meta.get("n_ratings", n)
        if made_from != n or (factors.fit_events is not None and len(factors.fit_events) != n):
            raise DataError(f"{self.features_path} was made from {made_from} ratings, "
                            f"{self.ratings_path} has {n}; rebuild the features")
        if factors.meta.get("archives", self.archives) != self.archives:
            raise DataError(f"{self.features_path} was made from other archives than "
                            f"{self.ratings_path}; rebuild the features")

    def _replay_rows(self, factors: Factors, n: int, n_warm: int) -> slice | np.ndarray:
        """Events replayed: after the warm start, none the features were fit on in a leak-free
        mode (prefix: the fit must end where the replay starts; split: the held-out events),
        capped at max_steps."""
        mask = factors.fit_events
        if self.fit.leak_free and mask is None:
            raise DataError(f"{self.features_path} does not record which events its "
                            f"{self.fit.token} fit used; rebuild the features")
        if self.fit.mode == "prefix" and self.n_fit > n_warm:
            raise ConfigError(
                f"warm_start = {self.warm_start} is not allowed with {self.features_path}: its "
                f"features were fit on the earliest {self.n_fit} events but the replay starts at "
                f"event {n_warm}; allowed: warm_start >= {self.n_fit / n:.4g}, or features fit "
                f"on at most the warm-start share (prefix<p> with p <= {100 * self.warm_start:g})")
        if self.fit.mode == "split":
            rows = np.flatnonzero(~mask[n_warm:]) + n_warm
            if self.max_steps is not None:
                rows = rows[: self.max_steps]
            if not len(rows):
                raise ConfigError(f"warm_start = {self.warm_start} leaves no held-out events "
                                  f"to replay ({self.features_path})")
            return rows
        stop = n if self.max_steps is None else min(n, n_warm + self.max_steps)
        if n_warm >= stop:
            raise ConfigError(f"warm_start = {self.warm_start} leaves no replay events")
        if self.fit.leak_free and mask[n_warm:stop].any():
            raise DataError(f"{self.features_path}: replayed events were used to fit the "
                            f"features ({self.fit.token}); rebuild the features")
        return slice(n_warm, stop)

    def _rewards(self, rating: np.ndarray) -> np.ndarray:
        """1[r ≥ threshold] (inclusive) or 1[r > threshold]."""
        hit = rating >= self.threshold if self.inclusive else rating > self.threshold
        return hit.astype(np.float64)

    def _warm_theta(self, f: h5py.File, n_warm: int) -> np.ndarray:
        """Ridge fit on the earliest events (docs/realdata.md, "Replay"): θ₀ = (λI + XᵀX)⁻¹Xᵀr."""
        gram = self.ridge * np.eye(self.d)
        moment = np.zeros(self.d)
        for lo in range(0, n_warm, WARM_CHUNK):
            hi = min(n_warm, lo + WARM_CHUNK)
            x = arm_features(self.P[f["user"][lo:hi]], self.Q[f["item"][lo:hi]],
                             self.feature_map, self.normalize)
            r = self._rewards(f["rating"][lo:hi])
            gram += x.T @ x
            moment += x.T @ r
        return np.linalg.solve(gram, moment)

    def _rated_index(self, user: np.ndarray, item: np.ndarray) -> None:
        order = np.lexsort((item, user))
        self.rated_items = item[order]
        self.rated_ptr = np.searchsorted(user[order], np.arange(len(self.P) + 1))

    @property
    def n_steps(self) -> int:
        return len(self.user)

    @property
    def info(self) -> ProblemInfo:
        """Linear model on unit features, rewards in {0, 1}."""
        return ProblemInfo(family=str(self.params["family"]), d=self.d, K=self.K,
                           horizon=self.horizon, S=self.S, R=1.0)

    def describe(self) -> dict[str, float]:
        """Scalars recorded with each shard; `log_ctr` is the CTR uniform choice expects."""
        return {"n_users": float(len(self.P)), "n_items": float(self.n_items),
                "k": float(len(self.Q[0])), "d": float(self.d), "K": float(self.K),
                "replay_events": float(self.n_steps), "warm_events": float(self.n_warm),
                "log_ctr": float(self.reward.mean()), "fit_events": float(self.n_fit),
                "feature_auc": self.feature_auc, "feature_coverage": self.feature_coverage}

    def provenance(self) -> dict[str, Any]:
        """Archives the data came from (stamps: sha256, pinned) and the feature-fit mode."""
        return shard_provenance(self.dataset, self.archives, self.fit)

    def environment(self, trial: int) -> RatingReplay:
        return RatingReplay(self, trial)


class RatingReplay(ReplayEnvironment):
    """One trial of a replay: step-indexed candidate sets drawn lazily in fixed-size chunks."""

    def __init__(self, instance: ReplayInstance, trial: int) -> None:
        self.instance = instance
        self.info = instance.info
        self.theta0 = instance.theta0
        self.rng = reward_rng(instance.seed, trial)
        n = instance.n_steps
        self.order = self.rng.permutation(n) if instance.order == "shuffle" else None
        self._cands: list[np.ndarray] = []
        self._pos: list[np.ndarray] = []
        self._features: tuple[int, np.ndarray] | None = None

    @property
    def horizon(self) -> int:
        """Counted (accepted) rounds of a run."""
        return self.instance.horizon

    @property
    def n_steps(self) -> int:
        return self.instance.n_steps

    def event(self, step: int) -> int:
        """Row of the replay stream shown at `step`."""
        return step if self.order is None else int(self.order[step])

    def _draw_chunk(self) -> None:
        inst, K = self.instance, self.instance.K
        lo = len(self._cands) * CHUNK
        steps = np.arange(lo, min(lo + CHUNK, self.n_steps))
        rows = steps if self.order is None else self.order[steps]
        logged = inst.item[rows].astype(np.int64)
        if inst.candidates == "uniform":
            others = self._uniform_others(logged, K - 1)
        else:
            others = self._rated_others(inst.user[rows], logged, K - 1)
        pos = self.rng.integers(0, K, size=len(steps))
        cands = np.empty((len(steps), K), dtype=np.int32)
        cands[:, : K - 1] = others
        idx = np.arange(len(steps))
        cands[:, K - 1] = cands[idx, pos]
        cands[idx, pos] = logged
        self._cands.append(cands)
        self._pos.append(pos)

    def _uniform_others(self, logged: np.ndarray, m: int) -> np.ndarray:
        """m distinct items per row, uniform over the items other than the logged one."""
        n_items = self.instance.n_items
        out = self.rng.integers(0, n_items - 1, size=(len(logged), m))
        out += out >= logged[:, None]
        while m > 1:
            s = np.sort(out, axis=1)
            redo = np.flatnonzero((s[:, 1:] == s[:, :-1]).any(axis=1))
            if not len(redo):
                break
            fresh = self.rng.integers(0, n_items - 1, size=(len(redo), m))
            out[redo] = fresh + (fresh >= logged[redo, None])
        return out

    def _rated_others(self, users: np.ndarray, logged: np.ndarray, m: int) -> np.ndarray:
        """m distinct items the user rated (other than the logged one), topped up uniformly."""
        inst = self.instance
        out = np.empty((len(logged), m), dtype=np.int64)
        for i, (u, item) in enumerate(zip(users, logged, strict=True)):
            rated = inst.rated_items[inst.rated_ptr[u]:inst.rated_ptr[u + 1]]
            rated = rated[rated != item]
            take = self.rng.choice(rated, size=min(m, len(rated)), replace=False)
            if len(take) < m:
                pool = np.setdiff1d(np.arange(inst.n_items), np.append(rated, item))
                take = np.append(take, self.rng.choice(pool, size=m - len(take), replace=False))
            out[i] = take
        return out

    def _slot(self, step: int) -> tuple[int, int]:
        if not 0 <= step < self.n_steps:
            raise IndexError(f"replay step {step} outside 0..{self.n_steps - 1}")
        chunk, offset = divmod(step, CHUNK)
        while len(self._cands) <= chunk:
            self._draw_chunk()
        return chunk, offset

    def candidates(self, step: int) -> np.ndarray:
        """Item indices offered at `step`."""
        chunk, offset = self._slot(step)
        return self._cands[chunk][offset]

    def logged_index(self, step: int) -> int:
        """Position of the logged item in the candidate set of `step`."""
        chunk, offset = self._slot(step)
        return int(self._pos[chunk][offset])

    def arms(self, step: int) -> np.ndarray:
        """Features of the candidate set of replay step `step`, shape (K, d); computed for a
        whole chunk of steps at once (the current chunk is kept)."""
        chunk, offset = self._slot(step)
        if self._features is None or self._features[0] != chunk:
            inst = self.instance
            lo = chunk * CHUNK
            steps = np.arange(lo, lo + len(self._cands[chunk]))
            users = inst.user[steps if self.order is None else self.order[steps]]
            self._features = (chunk, arm_features(inst.P[users][:, None, :],
                                                  inst.Q[self._cands[chunk]],
                                                  inst.feature_map, inst.normalize))
        return self._features[1][offset]

    def logged_reward(self, step: int) -> float:
        """Reward of the logged item at `step` (any other choice has no logged outcome)."""
        return float(self.instance.reward[self.event(step)])

    def exhausted(self, counted: int, steps: int) -> str:
        return (f"replay log exhausted: {counted} of horizon {self.horizon} rounds counted after "
                f"{steps} steps ({self.instance.ratings_path}); lower horizon or K, or raise "
                "max_steps")


MOVIELENS_REPLAY = InstanceKind(
    "movielens_replay", REPLAY_KEYS, lambda keys: ReplayInstance("movielens_replay", keys),
    "MovieLens replay: time order, reward 1[rating ≥ 4], warm start on the first 10 %")
JESTER_REPLAY = InstanceKind(
    "jester_replay", JESTER_KEYS, lambda keys: ReplayInstance("jester_replay", keys),
    "Jester replay: random order per trial, reward 1[rating > 0], cold start")
