"""Where each stage of the data pipeline writes under the data root."""

from __future__ import annotations

from pathlib import Path


def archive_path(root: str | Path, file: str) -> Path:
    return Path(root) / "archives" / file


def stamp_path(root: str | Path, file: str) -> Path:
    """Verification stamp of one archive."""
    return Path(root) / "archives" / f"{file}.verified.json"


def raw_dir(root: str | Path, stem: str) -> Path:
    """Folder holding the extracted content of one archive."""
    return Path(root) / "raw" / stem


def ratings_path(root: str | Path, dataset: str) -> Path:
    """Parsed, time-sorted ratings of a dataset."""
    return Path(root) / dataset / "ratings.h5"


def features_path(root: str | Path, dataset: str, k: int | str, fit: str = "whole") -> Path:
    """Rank-k SVD factors of a dataset, fit on the events of `fit` (fitting.py: whole,
    prefix<p>, split<p>)."""
    return Path(root) / dataset / f"svd_k{k}_{fit}.h5"
