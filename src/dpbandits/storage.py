"""HDF5 shard files: one file per (experiment, algorithm, ε, instance, trial block).

Layout (SCHEMA_VERSION 1): datasets `trials` (n,), `checkpoints` (m,) 1-based rounds,
`cum_regret` and `cum_reward` (n, m), `wall_time` (n,), `ledger` (n,) JSON strings, group
`diagnostics/<name>` (n,) floats, group `events/<trial>/<name>` arrays; attributes
`schema_version`, `spec` (JSON), `instance` (JSON), `package_version`, `git_commit`, `complete`,
and on real-data shards only `provenance` (JSON: archives with sha256 and pinned flag, feature
fit; docs/realdata.md, "Provenance").
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from dpbandits import __version__
from dpbandits.atomic import atomic_output
from dpbandits.errors import ShardError

SCHEMA_VERSION = 1
REQUIRED_DATASETS = ("trials", "checkpoints", "cum_regret", "cum_reward", "wall_time", "ledger")
# How each curve is stored. The reward curves, byte-shuffled, gzip 11× smaller at level 1; the
# regret curves' low mantissa bytes are noise, which gzip shrinks by two fifths only, so they are
# stored raw: a paper run's shards are written and read in half of gzip level 4's CPU time, for a
# fifth more disk.
CURVE_FILTERS: dict[str, dict[str, object]] = {
    "cum_regret": {},
    "cum_reward": {"compression": "gzip", "compression_opts": 1, "shuffle": True},
}


@dataclass
class ShardData:
    """In-memory content of one shard file."""

    spec: dict[str, Any]
    instance: dict[str, float]
    trials: np.ndarray
    checkpoints: np.ndarray
    cum_regret: np.ndarray
    cum_reward: np.ndarray
    wall_time: np.ndarray
    ledger: list[str]
    diagnostics: dict[str, np.ndarray] = field(default_factory=dict)
    events: dict[int, dict[str, np.ndarray]] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def final_regret(self) -> np.ndarray:
        return self.cum_regret[:, -1]

    @property
    def final_reward(self) -> np.ndarray:
        return self.cum_reward[:, -1]


@cache
def git_commit() -> str:
    """Commit of the source tree this package runs from, or 'unknown': asked of git once per
    process, when its first shard is written (or when the run's fork server loads, before it
    forks its jobs), so that every shard of a process names the code the process loaded."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 else "unknown"


def write_shard(path: str | Path, data: ShardData) -> None:
    """Write atomically: a temporary file in the same folder, fsync, then rename."""
    with atomic_output(path) as tmp:
        with h5py.File(tmp, "w") as f:
            f.attrs["schema_version"] = SCHEMA_VERSION
            f.attrs["spec"] = json.dumps(data.spec, sort_keys=True)
            f.attrs["instance"] = json.dumps(data.instance, sort_keys=True)
            f.attrs["package_version"] = __version__
            f.attrs["git_commit"] = data.attrs.get("git_commit", git_commit())
            if data.provenance:
                f.attrs["provenance"] = json.dumps(data.provenance, sort_keys=True)
            f.create_dataset("trials", data=np.asarray(data.trials, dtype=np.int64))
            f.create_dataset("checkpoints", data=np.asarray(data.checkpoints, dtype=np.int64))
            for name, filters in CURVE_FILTERS.items():
                f.create_dataset(name, data=np.asarray(getattr(data, name), dtype=np.float64),
                                 **filters)
            f.create_dataset("wall_time", data=np.asarray(data.wall_time, dtype=np.float64))
            f.create_dataset("ledger", data=np.array(data.ledger, dtype=h5py.string_dtype()))
            diag = f.create_group("diagnostics")
            for name, values in sorted(data.diagnostics.items()):
                diag.create_dataset(name, data=np.asarray(values, dtype=np.float64))
            events = f.create_group("events")
            for trial, named in sorted(data.events.items()):
                group = events.create_group(str(trial))
                for name, values in sorted(named.items()):
                    group.create_dataset(name, data=np.asarray(values))
            f.attrs["complete"] = 1
            f.flush()
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())


def read_shard(path: str | Path, *, events: bool = True) -> ShardData:
    """Read and validate a shard; any problem raises ShardError naming the file. With
    `events=False` the per-trial event arrays are checked but not read (`events` stays empty):
    aggregation does not use them, and they are most of a shard's datasets."""
    path = Path(path)
    if not path.is_file():
        raise ShardError(f"{path}: shard file does not exist")
    try:
        with h5py.File(path, "r") as f:
            version = f.attrs.get("schema_version")
            if version != SCHEMA_VERSION:
                raise ShardError(
                    f"{path}: schema_version {version!r} is not the supported {SCHEMA_VERSION}"
                )
            if f.attrs.get("complete") != 1:
                raise ShardError(f"{path}: shard was not completely written")
            missing = [name for name in REQUIRED_DATASETS if name not in f]
            if missing:
                raise ShardError(f"{path}: missing dataset(s) {', '.join(missing)}")
            data = ShardData(
                spec=json.loads(f.attrs["spec"]),
                instance=json.loads(f.attrs["instance"]),
                trials=f["trials"][()],
                checkpoints=f["checkpoints"][()],
                cum_regret=f["cum_regret"][()],
                cum_reward=f["cum_reward"][()],
                wall_time=f["wall_time"][()],
                ledger=[s.decode() if isinstance(s, bytes) else str(s) for s in f["ledger"][()]],
                diagnostics={k: v[()] for k, v in f["diagnostics"].items()},
                events=_events(f["events"], read=events),
                attrs={k: f.attrs[k] for k in ("package_version", "git_commit")},
                provenance=json.loads(f.attrs.get("provenance", "{}")),
            )
    except ShardError:
        raise
    except (OSError, KeyError, ValueError) as exc:
        raise ShardError(f"{path}: unreadable or corrupt shard ({exc})") from exc
    _check_shapes(path, data)
    return data


def _events(group: h5py.Group, read: bool) -> dict[int, dict[str, np.ndarray]]:
    """`events/<trial>/<name>`: a group of arrays per trial, read (else: a group per trial)."""
    if not isinstance(group, h5py.Group):
        raise ValueError("events is not a group")
    out: dict[int, dict[str, np.ndarray]] = {}
    for trial in group:
        key = int(trial)
        if group.get(trial, getclass=True) is not h5py.Group:
            raise ValueError(f"events/{trial} is not a group")
        if read:
            out[key] = {k: v[()] for k, v in group[trial].items()}
    return out


def _check_shapes(path: Path, data: ShardData) -> None:
    n, m = len(data.trials), len(data.checkpoints)
    for name in ("cum_regret", "cum_reward"):
        if getattr(data, name).shape != (n, m):
            raise ShardError(f"{path}: {name} has shape {getattr(data, name).shape}, "
                             f"expected {(n, m)}")
    if len(data.wall_time) != n or len(data.ledger) != n:
        raise ShardError(f"{path}: per-trial datasets do not have {n} rows")
    for name, values in data.diagnostics.items():
        if len(values) != n:
            raise ShardError(f"{path}: diagnostics/{name} does not have {n} rows")
    if not np.all(np.isfinite(data.cum_regret)):
        raise ShardError(f"{path}: cum_regret contains NaN or inf")
    if list(data.trials) != list(data.spec.get("trials", [])):
        raise ShardError(f"{path}: trials {list(data.trials)} differ from the spec's")
