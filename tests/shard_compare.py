"""Bitwise comparison of shard files and summaries between two result folders."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

# Measured seconds per trial: the only dataset that legitimately differs between two runs.
TIMING_DATASETS = frozenset({"wall_time"})
# Attributes that define the result (provenance such as git commit may differ between trees).
RESULT_ATTRS = ("schema_version", "complete", "spec", "instance")
# summary.csv: columns that identify a row, and the result columns compared exactly.
SUMMARY_KEYS = ("algorithm", "epsilon", "instance_index", "seed")
SUMMARY_RESULTS = ("T", "regret", "reward", "mean_reward")


def _raw(dataset: h5py.Dataset) -> tuple[str, tuple[int, ...], bytes]:
    """dtype, shape and exact bytes of a dataset (strings as UTF-8 JSON)."""
    if h5py.check_string_dtype(dataset.dtype) is not None:
        values = [v.decode() if isinstance(v, bytes) else str(v)
                  for v in np.asarray(dataset[()]).ravel()]
        return "str", dataset.shape, json.dumps(values).encode()
    array = np.ascontiguousarray(dataset[()])
    return array.dtype.str, array.shape, array.tobytes()


def shard_content(path: Path) -> tuple[dict[str, tuple], dict[str, str]]:
    """Every dataset (except timings) by its HDF5 path, and the result-defining attributes."""
    datasets: dict[str, tuple] = {}
    with h5py.File(path, "r") as handle:

        def visit(name: str, obj: object) -> None:
            if isinstance(obj, h5py.Dataset) and name not in TIMING_DATASETS:
                datasets[name] = _raw(obj)

        handle.visititems(visit)
        attrs = {key: str(handle.attrs.get(key)) for key in RESULT_ATTRS}
    return datasets, attrs


def shard_differences(a: Path, b: Path) -> list[str]:
    """Human-readable differences between two shard files (empty when bitwise equal)."""
    if not a.is_file() or not b.is_file():
        return [f"missing: {p}" for p in (a, b) if not p.is_file()]
    data_a, attrs_a = shard_content(a)
    data_b, attrs_b = shard_content(b)
    problems = []
    for name in sorted(set(data_a) ^ set(data_b)):
        problems.append(f"{a.name}: dataset {name} only in one file")
    for name in sorted(set(data_a) & set(data_b)):
        if data_a[name] != data_b[name]:
            problems.append(f"dataset {name} differs")
    for key in RESULT_ATTRS:
        if attrs_a[key] != attrs_b[key]:
            problems.append(f"attribute {key} differs")
    return problems


def compare_shards(root_a: Path, root_b: Path, relpaths: list[str]) -> dict[str, list[str]]:
    """Differences per shard (relative to each results folder); {} when all are identical."""
    report = {}
    for rel in relpaths:
        problems = shard_differences(root_a / rel, root_b / rel)
        if problems:
            report[rel] = problems
    return report


def summary_results(path: Path) -> pd.DataFrame:
    """The result columns of a summary.csv, one row per (algorithm, ε, instance, trial)."""
    frame = pd.read_csv(path, dtype={"algorithm": str})
    frame = frame[[*SUMMARY_KEYS, *SUMMARY_RESULTS]]
    return frame.sort_values(list(SUMMARY_KEYS), na_position="first").reset_index(drop=True)


def summary_differences(a: Path, b: Path) -> list[str]:
    """Differences of the key and regret/reward columns of two summary.csv files."""
    frame_a, frame_b = summary_results(a), summary_results(b)
    if frame_a.shape != frame_b.shape:
        return [f"{a}: {frame_a.shape[0]} rows vs {frame_b.shape[0]} rows"]
    problems = []
    for column in (*SUMMARY_KEYS, *SUMMARY_RESULTS):
        col_a, col_b = frame_a[column].to_numpy(), frame_b[column].to_numpy()
        if col_a.dtype.kind == "f" and col_b.dtype.kind == "f":
            same = np.array_equal(col_a, col_b, equal_nan=True)
        else:
            same = np.array_equal(col_a.astype(str), col_b.astype(str))
        if not same:
            problems.append(f"{a.parent.name}/summary.csv: column {column} differs")
    return problems


def shard_digest(path: Path) -> str:
    """sha256 of every result dataset (dtype, shape, bytes) and result attribute of a shard."""
    datasets, attrs = shard_content(path)
    digest = hashlib.sha256()
    for name in sorted(datasets):
        kind, shape, raw = datasets[name]
        digest.update(f"{name}|{kind}|{shape}|".encode())
        digest.update(raw)
    for key in sorted(attrs):
        digest.update(f"{key}={attrs[key]}".encode())
    return digest.hexdigest()


def shard_digests(results: Path) -> dict[str, str]:
    """Digest of every shard under a results folder, by path relative to it."""
    return {str(p.relative_to(results)): shard_digest(p)
            for p in sorted(results.glob("*/shards/**/*.h5"))}

