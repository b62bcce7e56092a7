"""Aggregation: shard files → tidy summary.csv (one row per trial) and curves.h5 per group."""

from __future__ import annotations

import json
import shutil
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pandas as pd

from dpbandits.atomic import atomic_output
from dpbandits.config import format_epsilon, slug
from dpbandits.data.provenance import summary_fields
from dpbandits.errors import ShardError
from dpbandits.storage import ShardData, read_shard

CURVE_STATS = ("mean", "sd", "se", "q05", "q25", "q50", "q75", "q95")
"""The statistics `curves.h5` keeps of each curve; the aggregate rule reruns when they change."""


NON_PRIVATE = "none"
"""The accounting column of a non-private algorithm's rows: no privacy, nothing to account."""


def accounting_label(spec: dict[str, Any]) -> str:
    """A shard's accounting mode (strict or paper), or `none` for a non-private algorithm."""
    return NON_PRIVATE if spec.get("epsilon") is None else spec.get("accounting", "strict")


def summary_rows(path: str | Path, shard: ShardData, extra: dict[str, Any]) -> list[dict]:
    """One tidy row per trial of a shard."""
    spec = shard.spec
    base = {
        "experiment": spec["experiment"],
        "algorithm": spec["algorithm"],
        "policy": spec["policy"],
        "accounting": accounting_label(spec),
        "epsilon": np.nan if spec.get("epsilon") is None else float(spec["epsilon"]),
        "delta": spec.get("delta"),
        "instance_index": spec["instance_index"],
        "T": int(shard.checkpoints[-1]),
        "shard": str(path),
        **{("instance_seed" if k == "seed" else k): v for k, v in spec["instance"].items()
           if isinstance(v, int | float | str) and k not in ("horizon", "generator")},
        **shard.instance,
        **summary_fields(shard.provenance),
        **extra,
    }
    rows = []
    for i, trial in enumerate(shard.trials):
        row = dict(base)
        row.update(
            seed=int(trial),
            regret=float(shard.cum_regret[i, -1]),
            reward=float(shard.cum_reward[i, -1]),
            mean_reward=float(shard.cum_reward[i, -1] / shard.checkpoints[-1]),
            wall_time=float(shard.wall_time[i]),
        )
        for name, values in shard.diagnostics.items():
            row[name] = float(values[i])
        rows.append(row)
    return rows


def curve_stats(curves: np.ndarray) -> dict[str, np.ndarray]:
    """Mean, sd, standard error and the 5/25/50/75/95 % quantiles across trials at each
    checkpoint."""
    n = curves.shape[0]
    sd = curves.std(axis=0, ddof=1) if n > 1 else np.zeros(curves.shape[1])
    q05, q25, q50, q75, q95 = np.quantile(curves, [0.05, 0.25, 0.5, 0.75, 0.95], axis=0)
    stats = {"mean": curves.mean(axis=0), "sd": sd, "se": sd / np.sqrt(n), "q05": q05,
             "q25": q25, "q50": q50, "q75": q75, "q95": q95}
    return {name: stats[name] for name in CURVE_STATS}


def spec_differences(stored: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """Keys (dotted paths) whose values differ between a shard's stored spec and the config's."""
    a, b = _flatten(json.loads(json.dumps(stored))), _flatten(json.loads(json.dumps(wanted)))
    return [f"{key} {a.get(key, '—')!r} ≠ {b.get(key, '—')!r}"
            for key in sorted(set(a) | set(b)) if a.get(key) != b.get(key)]


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_flatten(item, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): value}


def checked_shards(paths: list[str | Path], expected: dict[str, dict[str, Any]] | None,
                   quarantine: str | Path | None) -> list[ShardData]:
    """Every shard, read and validated and its spec compared with the config's; unreadable or
    stale shards are moved to `quarantine` (so that rerunning the same command recomputes them)
    and reported in one error line."""
    shards, bad = [], []
    for path in paths:
        try:
            shard = read_shard(path, events=False)
        except ShardError as exc:
            bad.append((Path(path), f"unreadable ({exc})"))
            continue
        wanted = None if expected is None else expected.get(str(path))
        differences = [] if wanted is None else spec_differences(shard.spec, wanted)
        if differences:
            bad.append((Path(path), "made for another config: " + "; ".join(differences[:4])))
            continue
        shards.append(shard)
    if bad:
        if quarantine is None:
            raise ShardError(" | ".join(f"{path}: {why}" for path, why in bad))
        moved = [f"{path}: {why} (moved to {set_aside(path, quarantine)})" for path, why in bad]
        raise ShardError(" | ".join(moved) + "; rerun the same command to recompute "
                         + ("it" if len(bad) == 1 else f"these {len(bad)} shards"))
    return shards


def set_aside(path: Path, quarantine: str | Path) -> Path:
    """Move a bad shard under `quarantine` (its path kept, a time stamp added)."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    quarantine = Path(quarantine)
    try:
        relative = path.relative_to(quarantine.parent)
    except ValueError:
        relative = path.relative_to(path.anchor) if path.is_absolute() else path
    target = quarantine / f"{relative}.{stamp}"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(path), target)
    return target


def aggregate(
    shard_paths: list[str | Path],
    summary_path: str | Path,
    curves_path: str | Path,
    grid_columns: dict[str, dict[str, Any]] | None = None,
    expected_specs: dict[str, dict[str, Any]] | None = None,
    quarantine: str | Path | None = None,
) -> pd.DataFrame:
    """Read and validate every shard (against the config's specs when given), write
    summary.csv and curves.h5 (atomically)."""
    grid_columns = grid_columns or {}
    rows: list[dict] = []
    groups: dict[tuple, list[ShardData]] = defaultdict(list)
    for path, shard in zip(shard_paths, checked_shards(shard_paths, expected_specs, quarantine),
                           strict=True):
        rows.extend(summary_rows(path, shard, grid_columns.get(shard.spec["algorithm"], {})))
        key = (shard.spec["algorithm"], format_epsilon(shard.spec.get("epsilon")),
               shard.spec["instance_index"])
        groups[key].append(shard)
    summary = pd.DataFrame(rows).sort_values(
        ["algorithm", "epsilon", "instance_index", "seed"], na_position="first"
    )
    with atomic_output(summary_path) as tmp:
        summary.to_csv(tmp, index=False)
    _write_curves(groups, curves_path)
    return summary


def _write_curves(groups: dict[tuple, list[ShardData]], path: str | Path) -> None:
    with atomic_output(path) as tmp, h5py.File(tmp, "w") as f:
        for (algorithm, eps, index), shards in sorted(groups.items()):
            shards = sorted(shards, key=lambda s: int(s.trials[0]))
            checkpoints = shards[0].checkpoints
            regret = np.vstack([s.cum_regret for s in shards])
            reward = np.vstack([s.cum_reward for s in shards])
            group = f.create_group(f"{slug(algorithm)}/eps~{eps}/inst~{index}")
            group.attrs.update(algorithm=algorithm, epsilon=eps, instance_index=index,
                               instance=json.dumps(shards[0].instance),
                               accounting=accounting_label(shards[0].spec),
                               n_trials=regret.shape[0])
            group.create_dataset("checkpoints", data=checkpoints)
            for name, values in (("regret", regret), ("reward", reward)):
                for stat, arr in curve_stats(values).items():
                    group.create_dataset(f"{name}_{stat}", data=arr)


def load_curves(path: str | Path) -> list[dict[str, Any]]:
    """Every curve group of a curves.h5 as a dict of attributes and arrays."""
    out = []
    with h5py.File(path, "r") as f:

        def visit(name: str, obj: Any) -> None:
            if isinstance(obj, h5py.Group) and "checkpoints" in obj:
                item = dict(obj.attrs)
                item["instance"] = json.loads(item["instance"])
                item.update({k: v[()] for k, v in obj.items()})
                out.append(item)

        f.visititems(visit)
    return out
