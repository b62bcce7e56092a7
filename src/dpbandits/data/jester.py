"""Jester parsers: dataset 2 `jester_ratings.dat` and the matrix files of datasets 1/2+/4.

`jester_ratings.dat`: user joke rating, whitespace-separated. Matrix files (`.xls`/`.xlsx`):
column 0 = number of jokes rated, then one column per joke, 99 = not rated. Layouts as the
publisher documents them (docs/realdata.md, "Datasets").
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from dpbandits.data import DataError
from dpbandits.data.ratings import RawRatings

log = logging.getLogger(__name__)
UNRATED = 99.0
RATING_RANGE = (-10.0, 10.0)


def _check_range(path: Path, rating: np.ndarray) -> None:
    low, high = RATING_RANGE
    bad = (rating < low - 1e-6) | (rating > high + 1e-6)
    if bad.any():
        raise DataError(f"{path}: {int(bad.sum())} rating(s) outside [{low:g}, {high:g}], "
                        f"e.g. {float(rating[bad][0])}")


def read_ratings_dat(path: str | Path) -> RawRatings:
    """Jester dataset 2 `jester_ratings.dat`; rows with the unrated marker 99 are dropped."""
    path = Path(path)
    frame = pd.read_csv(path, sep=r"\s+", header=None, names=["user", "item", "rating"],
                        dtype={"user": np.int64, "item": np.int64, "rating": np.float32},
                        engine="c")
    rated = frame["rating"].to_numpy() != UNRATED
    rating = frame["rating"].to_numpy()[rated]
    _check_range(path, rating)
    return RawRatings(user=frame["user"].to_numpy()[rated], item=frame["item"].to_numpy()[rated],
                      rating=rating, sources=[str(path)])


def read_matrix(path: str | Path, user_offset: int = 0) -> RawRatings:
    """A Jester matrix workbook (.xls or .xlsx): row = user (numbered from `user_offset`),
    column j ≥ 1 = joke j, 99 = not rated; column 0 must equal the user's count of ratings."""
    path = Path(path)
    try:
        frame = pd.read_excel(path, header=None, engine="calamine")
    except ImportError as exc:
        raise DataError(f"{path}: reading workbooks needs python-calamine ({exc})") from None
    values = frame.to_numpy(dtype=np.float64, na_value=UNRATED)
    if values.ndim != 2 or values.shape[1] < 2:
        raise DataError(f"{path}: expected a users × (1 + jokes) matrix, got {values.shape}")
    counts, grid = values[:, 0], values[:, 1:]
    rated = grid != UNRATED
    mismatch = int((rated.sum(axis=1) != counts).sum())
    if mismatch:
        log.warning("%s: %d user row(s) whose column-0 count differs from the rated cells",
                    path, mismatch)
    rows, cols = np.nonzero(rated)
    rating = grid[rows, cols].astype(np.float32)
    _check_range(path, rating)
    return RawRatings(user=rows.astype(np.int64) + user_offset, item=cols.astype(np.int64) + 1,
                      rating=rating, sources=[str(path)])
