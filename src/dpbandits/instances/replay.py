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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from dpbandits.contract import ProblemInfo, ReplayEnvironment
from dpbandits.data import DataError
from dpbandits.data.features import feature_meta, open_features
from dpbandits.data.fitting import parse_fit
from dpbandits.data.leakage import auc
from dpbandits.data.provenance import shard_provenance
from dpbandits.data.supply import check_supply, supply_from_keys, supply_of
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
from dpbandits.run_cache import cached_arrays
from dpbandits.seeding import reward_rng

log = logging.getLogger(__name__)

FEATURE_MAPS = ("biased", "product", "concat")
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
    choice("feature_map", "product", "x = P_u ⊙ Q_a (product), [P_u ⊙ Q_a, b_a, b_u, 1] "
           "(biased) or [P_u; Q_a] (concat)", FEATURE_MAPS),
    choice("normalize", "unit", "features scaled to unit norm, or clipped into the unit ball",
           NORMALIZATIONS),
    number("scale", 1.0, "features divided by this before the normalisation", gt=0),
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
                 normalize: str, user_bias: np.ndarray | float = 0.0,
                 item_bias: np.ndarray | float = 0.0, scale: float = 1.0) -> np.ndarray:
    """Rows x_a of the candidates (docs/realdata.md, "Replay"), divided by `scale`, then scaled
    to unit norm (`unit`; a zero vector stays zero) or clipped into the unit ball (`clip`):
    `product` x = P_u ⊙ Q_a; `biased` x = [P_u ⊙ Q_a, b_a, b_u, 1]; `concat` x = [P_u; Q_a].
    `item_vecs` is (..., K, k) and `user_vec` (..., k); biases broadcast like them."""
    user_vec = np.asarray(user_vec, dtype=np.float64)
    item_vecs = np.asarray(item_vecs, dtype=np.float64)
    if item_vecs.ndim == user_vec.ndim + 1:
        user_vec = user_vec[..., None, :]
    if feature_map == "concat":
        x = np.concatenate([np.broadcast_to(user_vec, item_vecs.shape), item_vecs], axis=-1)
    else:
        x = item_vecs * user_vec
    if feature_map == "biased":
        shape = x.shape[:-1]
        b_item = np.broadcast_to(np.asarray(item_bias, dtype=np.float64), shape)
        b_user = np.asarray(user_bias, dtype=np.float64)
        if b_user.ndim == len(shape) - 1:
            b_user = b_user[..., None]
        x = np.concatenate([x, b_item[..., None], np.broadcast_to(b_user, shape)[..., None],
                            np.ones((*shape, 1))], axis=-1)
    if scale != 1.0:
        x = x / scale
    norms = np.sqrt(np.einsum("...j,...j->...", x, x))[..., None]
    divide = np.where(norms > 0, norms, 1.0) if normalize == "unit" else np.maximum(norms, 1.0)
    return x / divide


def feature_dimension(k: int, feature_map: str) -> int:
    """d of a feature map on rank-k factors."""
    return {"product": k, "biased": k + 3, "concat": 2 * k}[feature_map]


class ReplayInstance:
    """A rating log with its features, ready to replay; one `environment(trial)` per trial."""

    def __init__(self, kind: str, params: dict[str, Any]) -> None:
        keys = JESTER_KEYS if kind == "jester_replay" else REPLAY_KEYS
        p = validate(kind, keys, params, kind="instance key")
        self.kind = kind
        self.params = p
        self.horizon, self.K, self.seed = p["horizon"], p["K"], p["seed"]
        self.candidates, self.feature_map = p["candidates"], p["feature_map"]
        self.normalize, self.order = p["normalize"], p["order"]
        self.scale = float(p["scale"])
        self.threshold = float(p["threshold"])
        self.inclusive = p["inclusive"]
        self.warm_start = float(p["warm_start"])
        self.ridge = float(p["ridge"])
        self.S = float(p["S"])
        self.max_steps = p["max_steps"]
        self.ratings_path, self.features_path = Path(p["ratings"]), Path(p["features"])
        requires = {str(Path(r)) for r in p["requires"]}
        if not {str(self.ratings_path), str(self.features_path)} <= requires:
            raise ConfigError(f"requires = {p['requires']!r} is not allowed; must list the "
                              f"ratings ({p['ratings']}) and features ({p['features']}) files")
        self._load()
        check_supply(kind, p, supply_of(self))

    def _load(self) -> None:
        meta = feature_meta(self.features_path)
        self.fit = parse_fit(meta.get("fit", "whole"))
        if self.fit.mode == "online" and self.order == "shuffle":
            raise ConfigError(f"features = {self.features_path} is not allowed with order = "
                              "shuffle: online features follow the log's time order; use "
                              "split<p> features")
        k = int(meta["k"])
        self.d = feature_dimension(k, self.feature_map)
        if self.params["d"] is not None and self.params["d"] != self.d:
            raise ConfigError(f"d = {self.params['d']!r} is not allowed; the {self.feature_map} "
                              f"features of {self.features_path} have d = {self.d}")
        if not self.ratings_path.is_file():
            raise DataError(f"{self.ratings_path}: ratings file does not exist (run the data "
                            "rules first)")
        with h5py.File(self.ratings_path, "r") as f:
            n = int(f.attrs["n_ratings"])
            self.n_users, self.n_items = int(f.attrs["n_users"]), int(f.attrs["n_items"])
            if (int(meta["n_users"]), int(meta["n_items"])) != (self.n_users, self.n_items):
                raise DataError(f"{self.features_path} does not match {self.ratings_path} "
                                "(different numbers of users or items); rebuild the features")
            if self.K > self.n_items:
                raise ConfigError(f"K = {self.K} is not allowed; must be <= {self.n_items} items")
            self.dataset = str(f.attrs["dataset"])
            self.archives = json.loads(f.attrs.get("archives", "[]"))
            self._check_features(meta, n)
            self.n_warm = int(math.floor(self.warm_start * n))
            stop = n if self.fit.mode in ("split", "whole") else max(self.fit.n_fit(n),
                                                                        self.n_warm)
            user, item, rating = (f[name][:stop] for name in ("user", "item", "rating"))
            self.source = open_features(self.features_path, user, item, rating)
            if self.feature_map == "biased" and not self.source.biased:
                raise ConfigError(f"feature_map = biased is not allowed with "
                                  f"{self.features_path}: its features carry no biases; rebuild "
                                  "them with data/svd/center = biases, or use product")
            rows = self._replay_rows(getattr(self.source, "factors", None), n)
            self.rows = np.arange(rows.start, rows.stop) if isinstance(rows, slice) else rows
            if len(self.rows) and int(self.rows[-1]) >= stop:
                user, item, rating = (f[name][()] for name in ("user", "item", "rating"))
            self.user, self.item = user[self.rows], item[self.rows]
            if self.candidates == "rated":
                self._rated_index(f["user"][()], f["item"][()])
        self.reward = self._rewards(rating[self.rows])
        derived = cached_arrays("replay_derived", self._derived_key(),
                                {"theta0": ((self.d if self.n_warm else 0,), np.float64),
                                 "signal": ((2,), np.float64)},
                                lambda: self._derive(user, item, rating))
        self.theta0 = derived["theta0"] if self.n_warm else None
        self.feature_auc, self.feature_coverage = (float(v) for v in derived["signal"])

    def _derived_key(self) -> dict[str, Any]:
        """What θ₀ and the signal measures depend on: the files (path, size, modification
        time) and the keys that shape the features and rewards."""
        files = {str(p): [p.stat().st_size, p.stat().st_mtime_ns]
                 for p in (self.ratings_path, self.features_path)}
        keys = ("feature_map", "normalize", "scale", "ridge", "threshold", "inclusive",
                "warm_start", "max_steps")
        return {"kind": self.kind, "files": files, **{k: self.params[k] for k in keys}}

    def _derive(self, user: np.ndarray, item: np.ndarray, rating: np.ndarray
                ) -> dict[str, np.ndarray]:
        """θ₀ of the warm start, and the AUC and coverage of the replayed events' scores."""
        theta0 = self._warm_theta(user, item, rating) if self.n_warm else np.zeros(0)
        scores, known = self.scores(self.rows, self.user, self.item)
        coverage = float(np.mean(known)) if len(known) else float("nan")
        return {"theta0": theta0, "signal": np.array([auc(scores, self.reward), coverage])}

    def _check_features(self, meta: dict[str, Any], n: int) -> None:
        """The features were made from this very ratings file (same events and archives)."""
        made_from = meta.get("n_ratings", n)
        if made_from != n:
            raise DataError(f"{self.features_path} was made from {made_from} ratings, "
                            f"{self.ratings_path} has {n}; rebuild the features")
        if meta.get("archives", self.archives) != self.archives:
            raise DataError(f"{self.features_path} was made from other archives than "
                            f"{self.ratings_path}; rebuild the features")

    def _replay_rows(self, factors: Any, n: int) -> slice | np.ndarray:
        """Events replayed: after the warm start, none the features were fit on in a leak-free
        mode (prefix: the fit must end where the replay starts; split: the held-out events;
        online: the events the features cover), capped at max_steps."""
        n_warm = self.n_warm
        mask = None if factors is None else factors.fit_events
        n_fit = self.fit.n_fit(n)
        self.n_fit = n if mask is None and self.fit.mode != "online" else \
            n_fit if mask is None else int(mask.sum())
        if self.fit.mode in ("prefix", "split") and mask is None:
            raise DataError(f"{self.features_path} does not record which events its "
                            f"{self.fit.token} fit used; rebuild the features")
        if mask is not None and len(mask) != n:
            raise DataError(f"{self.features_path} was made from {len(mask)} ratings, "
                            f"{self.ratings_path} has {n}; rebuild the features")
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
        end = n_fit if self.fit.mode == "online" else n
        stop = end if self.max_steps is None else n_warm + self.max_steps
        if self.fit.mode == "online" and stop > end:
            raise ConfigError(
                f"max_steps = {self.max_steps} is not allowed with {self.features_path}: the "
                f"replay would reach event {stop} of {n} but its {self.fit.token} features cover "
                f"the earliest {end}; allowed: max_steps <= {max(end - n_warm, 0)}, or features "
                f"covering more of the log (online<p> with p >= {_percent(stop, n)}, or online)")
        stop = min(stop, n)
        if n_warm >= stop:
            raise ConfigError(f"warm_start = {self.warm_start} leaves no replay events")
        if mask is not None and self.fit.leak_free and mask[n_warm:stop].any():
            raise DataError(f"{self.features_path}: replayed events were used to fit the "
                            f"features ({self.fit.token}); rebuild the features")
        return slice(n_warm, stop)

    def _rewards(self, rating: np.ndarray) -> np.ndarray:
        """1[r ≥ threshold] (inclusive) or 1[r > threshold]."""
        hit = rating >= self.threshold if self.inclusive else rating > self.threshold
        return hit.astype(np.float64)

    def features(self, event: np.ndarray, user: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Arm features (m, K, d) of the items (m, K) offered at events (m,) to their users."""
        p, b_user, _ = self.source.users(event, user)
        q, b_item, _ = self.source.items(event, items)
        return arm_features(p, q, self.feature_map, self.normalize, b_user, b_item, self.scale)

    def scores(self, event: np.ndarray, user: np.ndarray, item: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        """The features' predicted rating minus μ of each logged pair, s = P_u·Q_m (+ b_u + b_m
        when the features carry biases), and whether user and item are both known."""
        scores = np.empty(len(event))
        known = np.empty(len(event), dtype=bool)
        for lo in range(0, len(event), WARM_CHUNK):
            sl = slice(lo, min(len(event), lo + WARM_CHUNK))
            p, b_user, u_known = self.source.users(event[sl], user[sl])
            q, b_item, i_known = self.source.items(event[sl], item[sl, None])
            scores[sl] = np.einsum("ij,ij->i", p, q[:, 0]) + b_user + b_item[:, 0]
            known[sl] = u_known & i_known[:, 0]
        return scores, known

    def _warm_theta(self, user: np.ndarray, item: np.ndarray,
                    rating: np.ndarray) -> np.ndarray:
        """Ridge fit on the earliest events (docs/realdata.md, "Replay"): θ₀ = (λI + XᵀX)⁻¹Xᵀr,
        each event with its features at its own step."""
        gram = self.ridge * np.eye(self.d)
        moment = np.zeros(self.d)
        for lo in range(0, self.n_warm, WARM_CHUNK):
            event = np.arange(lo, min(self.n_warm, lo + WARM_CHUNK))
            x = self.features(event, user[event], item[event, None])[:, 0]
            r = self._rewards(rating[event])
            gram += x.T @ x
            moment += x.T @ r
        return np.linalg.solve(gram, moment)

    def _rated_index(self, user: np.ndarray, item: np.ndarray) -> None:
        order = np.lexsort((item, user))
        self.rated_items = item[order]
        self.rated_ptr = np.searchsorted(user[order], np.arange(self.n_users + 1))

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
        return {"n_users": float(self.n_users), "n_items": float(self.n_items),
                "k": float(self.source.k), "d": float(self.d), "K": float(self.K),
                "replay_events": float(self.n_steps), "warm_events": float(self.n_warm),
                "log_ctr": float(self.reward.mean()), "fit_events": float(self.n_fit),
                "feature_auc": self.feature_auc, "feature_coverage": self.feature_coverage}

    def provenance(self) -> dict[str, Any]:
        """Archives the data came from (stamps: sha256, pinned) and the feature-fit mode."""
        return shard_provenance(self.dataset, self.archives, self.fit)

    def environment(self, trial: int) -> RatingReplay:
        return RatingReplay(self, trial)


def _percent(events: int, n: int) -> int:
    """Smallest integer percentage p with ⌊n p / 100⌋ ≥ events."""
    return min(100, -(-100 * events // n))


class RatingReplay(ReplayEnvironment):
    """One trial of a replay: step-indexed candidate sets drawn lazily in fixed-size chunks."""

    n_steps: int = 0  # replay steps available

    def __init__(self, instance: ReplayInstance, trial: int) -> None:
        self.instance = instance
        self.info = instance.info
        self.theta0 = instance.theta0
        self.rng = reward_rng(instance.seed, trial)
        n = self.n_steps = instance.n_steps
        self.order = self.rng.permutation(n) if instance.order == "shuffle" else None
        self._cands: list[np.ndarray] = []
        self._pos: list[np.ndarray] = []
        self._features: tuple[int, np.ndarray] | None = None

    @property
    def horizon(self) -> int:
        """Counted (accepted) rounds of a run."""
        return self.instance.horizon

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
        chunk, offset = divmod(step, CHUNK)
        if chunk < len(self._cands) and step >= 0:
            return chunk, offset
        if not 0 <= step < self.n_steps:
            raise IndexError(f"replay step {step} outside 0..{self.n_steps - 1}")
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
        if self._features is not None and self._features[0] == chunk:
            return self._features[1][offset]
        inst = self.instance
        lo = chunk * CHUNK
        steps = np.arange(lo, lo + len(self._cands[chunk]))
        rows = steps if self.order is None else self.order[steps]
        self._features = (chunk, inst.features(inst.rows[rows], inst.user[rows],
                                               self._cands[chunk]))
        return self._features[1][offset]

    def tables(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Steps start … stop − 1 at once, for the runner's replay loop: the arms (n, K, d), the
        logged item's position (n,) and its reward (n,), as `arms`, `logged_index` and
        `logged_reward` give them one step at a time."""
        stop = min(stop, self.n_steps)
        steps = np.arange(start, stop)
        arms = np.empty((len(steps), self.instance.K, self.info.d))
        positions = np.empty(len(steps), dtype=np.int64)
        for chunk in range(start // CHUNK, (stop - 1) // CHUNK + 1 if stop > start else 0):
            lo, hi = max(start, chunk * CHUNK), min(stop, (chunk + 1) * CHUNK)
            self.arms(lo)  # draws the chunk's candidates and features
            assert self._features is not None
            arms[lo - start:hi - start] = self._features[1][lo - chunk * CHUNK:hi - chunk * CHUNK]
            positions[lo - start:hi - start] = self._pos[chunk][lo - chunk * CHUNK:
                                                                hi - chunk * CHUNK]
        rows = steps if self.order is None else self.order[steps]
        return arms, positions, self.instance.reward[rows]

    def features_at(self, step: int, items: np.ndarray) -> np.ndarray:
        """Features (len(items), d) the replay would show for `items` at `step`."""
        inst = self.instance
        row = np.array([self.event(step)])
        return inst.features(inst.rows[row], inst.user[row], np.asarray(items)[None, :])[0]

    def logged_reward(self, step: int) -> float:
        """Reward of the logged item at `step` (any other choice has no logged outcome)."""
        return float(self.instance.reward[self.event(step)])

    def exhausted(self, counted: int, steps: int) -> str:
        return (f"replay log exhausted: {counted} of horizon {self.horizon} rounds counted after "
                f"{steps} steps ({self.instance.ratings_path}); lower horizon or K, or raise "
                "max_steps")


@dataclass(frozen=True)
class ReplayKind(InstanceKind):
    """A replay generator whose check also refuses a horizon the log cannot supply
    (`data.supply`; at validation when the ratings file exists)."""

    def check(self, keys: dict[str, Any]) -> dict[str, Any]:
        checked = super().check(keys)
        check_supply(self.name, checked, supply_from_keys(checked))
        return checked


MOVIELENS_REPLAY = ReplayKind(
    "movielens_replay", REPLAY_KEYS, lambda keys: ReplayInstance("movielens_replay", keys),
    "MovieLens replay: time order, reward 1[rating ≥ 4], warm start on the first 10 %")
JESTER_REPLAY = ReplayKind(
    "jester_replay", JESTER_KEYS, lambda keys: ReplayInstance("jester_replay", keys),
    "Jester replay: random order per trial, reward 1[rating > 0], cold start")
