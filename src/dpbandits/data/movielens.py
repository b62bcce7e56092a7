"""MovieLens parsers: ml-25m / ml-latest-small CSV, ml-100k `u.data`, ml-1m `ratings.dat`.

CSV titles are quoted; `ratings.dat` is `::`-separated. Layouts as the GroupLens READMEs describe
them (docs/realdata.md, "Datasets").
"""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd

from dpbandits.data import DataError
from dpbandits.data.ratings import RawRatings

CSV_HEADER = ["userId", "movieId", "rating", "timestamp"]
MOVIES_HEADER = ["movieId", "title", "genres"]
DTYPES = {"user": np.int32, "item": np.int32, "rating": np.float32, "time": np.int64}


def _raw(frame: pd.DataFrame, path: Path) -> RawRatings:
    return RawRatings(
        user=frame["user"].to_numpy(), item=frame["item"].to_numpy(),
        rating=frame["rating"].to_numpy(), time=frame["time"].to_numpy(), sources=[str(path)],
    )


def read_ratings_csv(path: str | Path) -> RawRatings:
    """`ratings.csv` with header userId,movieId,rating,timestamp (ml-25m, ml-latest-small)."""
    path = Path(path)
    with open(path, encoding="utf-8") as handle:
        header = handle.readline().strip().split(",")
    if header != CSV_HEADER:
        raise DataError(f"{path}: header {header} is not the MovieLens {CSV_HEADER}")
    frame = pd.read_csv(path, engine="c", header=0, names=list(DTYPES),
                        dtype=dict(DTYPES))
    return _raw(frame, path)


def read_movies_csv(path: str | Path) -> dict[int, str]:
    """`movies.csv` (movieId,title,genres; titles may hold quoted commas) → id → title."""
    path = Path(path)
    frame = pd.read_csv(path, engine="c", dtype={"movieId": np.int64, "title": str,
                                                  "genres": str}, keep_default_na=False)
    if list(frame.columns) != MOVIES_HEADER:
        raise DataError(f"{path}: header {list(frame.columns)} is not the MovieLens "
                        f"{MOVIES_HEADER}")
    return dict(zip(frame["movieId"].tolist(), frame["title"].tolist(), strict=True))


def read_u_data(path: str | Path) -> RawRatings:
    """ml-100k `u.data`: tab-separated user, item, rating, timestamp; no header."""
    path = Path(path)
    frame = pd.read_csv(path, sep="\t", header=None, names=list(DTYPES), dtype=dict(DTYPES),
                        engine="c")
    return _raw(frame, path)


def read_ratings_dat(path: str | Path) -> RawRatings:
    """ml-1m `ratings.dat`: `UserID::MovieID::Rating::Timestamp`."""
    path = Path(path)
    text = path.read_text(encoding="latin-1").replace("::", "\t")
    frame = pd.read_csv(StringIO(text), sep="\t", header=None, names=list(DTYPES),
                        dtype=dict(DTYPES), engine="c")
    return _raw(frame, path)
