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
from dpbandits.data.readers import TextLayout, check_range, first_line, read_frame

log = logging.getLogger(__name__)
UNRATED = 99.0
RATING_RANGE = (-10.0, 10.0)
RATINGS_DAT = TextLayout("a Jester jester_ratings.dat", ("user", "joke", "rating"), 2,
                         RATING_RANGE, str.split, also=(UNRATED,), encoding="utf-8")


def read_ratings_dat(path: str | Path) -> RawRatings:
    """Jester dataset 2 `jester_ratings.dat`; rows with the unrated marker 99 are dropped."""
    path = Path(path)
    frame = read_frame(path, "a Jester jester_ratings.dat", RATINGS_DAT, sep=r"\s+",
                       header=None, names=["user", "item", "rating"],
                       dtype={"user": np.int64, "item": np.int64, "rating": np.float32})
    rated = frame["rating"].to_numpy() != UNRATED
    rating = frame["rating"].to_numpy()[rated]
    check_range(path, rating, RATING_RANGE, f" and {UNRATED:g} for not rated", RATINGS_DAT)
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
    except Exception as exc:  # the engines raise their own types (e.g. CalamineError)
        raise DataError(f"{path}: cannot be read as an Excel workbook (.xls or .xlsx): "
                        f"{type(exc).__name__}: {first_line(exc)}") from None
    try:
        values = frame.to_numpy(dtype=np.float64, na_value=UNRATED)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{path}: the workbook holds non-numeric cells ({first_line(exc)}); "
                        "allowed: numbers, 99 for not rated") from None
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
    check_range(path, rating, RATING_RANGE, f" and {UNRATED:g} for not rated")
    return RawRatings(user=rows.astype(np.int64) + user_offset, item=cols.astype(np.int64) + 1,
                      rating=rating, sources=[str(path)])
