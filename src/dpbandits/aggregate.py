"""Aggregation: shard files → tidy summary.csv (one row per trial) and curves.h5 per group."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pandas as pd

from dpbandits.atomic import atomic_output
from dpbandits.config import format_epsilon, slug
from dpbandits.storage import ShardData, read_shard

CURVE_STATS = ("mean", "sd", "se", "q05", "q95")


def summary_rows(path: str | Path, shard: ShardData, extra: dict[str, Any]) -> list[dict]:
    """One tidy row per trial of a shard."""
    spec = shard.spec
    base = {
        "experiment": spec["experiment"],
        "algorithm": spec["algorithm"],
        "policy": spec["policy"],
        "accounting": spec.get("accounting", "strict"),
        "epsilon": np.nan if spec.get("epsilon") is None else float(spec["epsilon"]),
        "delta": spec.get("delta"),
        "instance_index": spec["instance_index"],
        "T": int(shard.checkpoints[-1]),
        "shard": str(path),
        **{("instance_seed" if k == "seed" else k): v for k, v in spec["instance"].items()
           if isinstance(v, int | float | str) and k not in ("horizon", "generator")},
        **shard.instance,
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
    """Mean, sd, standard error and 5/95 % quantiles across trials at each checkpoint."""
    n = curves.shape[0]
    sd = curves.std(axis=0, ddof=1) if n > 1 else np.zeros(curves.shape[1])
    return {
        "mean": curves.mean(axis=0),
        "sd": sd,
        "se": sd / np.sqrt(n),
        "q05": np.quantile(curves, 0.05, axis=0),
        "q95": np.quantile(curves, 0.95, axis=0),
    }


def aggregate(
    shard_paths: list[str | Path],
    summary_path: str | Path,
    curves_path: str | Path,
    grid_columns: dict[str, dict[str, Any]] | None = None,
) -> pd.DataFrame:
    """Read and validate every shard, write summary.csv and curves.h5 (atomically)."""
    grid_columns = grid_columns or {}
    rows: list[dict] = []
    groups: dict[tuple, list[ShardData]] = defaultdict(list)
    for path in shard_paths:
        shard = read_shard(path)
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
                               accounting=shards[0].spec.get("accounting", "strict"),
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
