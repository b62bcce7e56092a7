"""MovieLens parsers: ml-25m / ml-latest-small CSV, ml-100k `u.data`, ml-1m `ratings.dat`.

CSV titles are quoted; `ratings.dat` is `::`-separated. Layouts as the GroupLens READMEs describe
them (docs/realdata.md, "Datasets"). Variants found in re-packed copies are accepted where the
content is unambiguous: CRLF line ends, a UTF-8 byte-order mark, empty trailing columns (a comma
at the end of every line). Any other reader failure, and any rating outside the published scale,
is one DataError line naming the file.
"""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd

from dpbandits.data import DataError
from dpbandits.data.ratings import RawRatings
from dpbandits.data.readers import (
    READ_ERRORS,
    TextLayout,
    check_range,
    first_bad_line,
    first_line,
    read_frame,
)

CSV_HEADER = ["userId", "movieId", "rating", "timestamp"]
MOVIES_HEADER = ["movieId", "title", "genres"]
DTYPES = {"user": np.int32, "item": np.int32, "rating": np.float32, "time": np.int64}
CSV_RANGE = (0.5, 5.0)
"""Half stars 0.5–5 (ml-25m and ml-latest-small READMEs)."""
STAR_RANGE = (1.0, 5.0)
"""Whole stars 1–5 (ml-100k and ml-1m READMEs)."""
U_DATA = TextLayout("an ml-100k u.data", ("user id", "item id", "rating", "timestamp"), 2,
                    STAR_RANGE, lambda line: line.split("\t"), encoding="latin-1")
RATINGS_DAT = TextLayout("an ml-1m ratings.dat", ("UserID", "MovieID", "Rating", "Timestamp"),
                         2, STAR_RANGE, lambda line: line.split("::"), encoding="latin-1")


def csv_layout(width: int) -> TextLayout:
    """A MovieLens ratings.csv of `width` fields a line (4, or more with empty trailing ones)."""
    return TextLayout("a MovieLens ratings.csv", tuple(CSV_HEADER), 2, CSV_RANGE,
                      lambda line: line.split(","), header=True, width=width)


def _raw(frame: pd.DataFrame, path: Path, allowed: tuple[float, float],
         layout: TextLayout) -> RawRatings:
    rating = frame["rating"].to_numpy()
    check_range(path, rating, allowed, layout=layout)
    return RawRatings(
        user=frame["user"].to_numpy(), item=frame["item"].to_numpy(),
        rating=rating, time=frame["time"].to_numpy(), sources=[str(path)],
    )


def _fields(line: str) -> list[str]:
    return line.rstrip("\r\n").split(",")


def _csv_layout(path: Path) -> int:
    """Number of columns of a ratings.csv (4, or more when every line ends in commas); checks
    the header."""
    try:
        with open(path, encoding="utf-8-sig") as handle:
            header, first = _fields(handle.readline()), _fields(handle.readline())
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({first_line(exc)})") from None
    names = list(header)
    while names and names[-1].strip() == "":
        names.pop()
    if [n.strip() for n in names] != CSV_HEADER:
        raise DataError(f"{path}: header {names} is not the MovieLens {CSV_HEADER}")
    return max(len(header), len(first), len(CSV_HEADER))


def read_ratings_csv(path: str | Path) -> RawRatings:
    """`ratings.csv` with header userId,movieId,rating,timestamp (ml-25m, ml-latest-small)."""
    path = Path(path)
    width = _csv_layout(path)
    layout = csv_layout(width)
    extra = [f"extra{i}" for i in range(width - len(DTYPES))]
    frame = read_frame(path, "a MovieLens ratings.csv", layout, header=0,
                       names=[*DTYPES, *extra], dtype={**DTYPES, **dict.fromkeys(extra, str)},
                       index_col=False, encoding="utf-8-sig")
    for column in extra:
        filled = frame[column].notna()
        if filled.any():
            row = int(np.flatnonzero(filled.to_numpy())[0]) + 2
            raise DataError(f"{path}: line {row} has a value after the timestamp column "
                            f"({frame[column][filled].iloc[0]!r}); allowed: the four columns "
                            f"{','.join(CSV_HEADER)}")
    return _raw(frame, path, CSV_RANGE, layout)


def read_movies_csv(path: str | Path) -> dict[int, str]:
    """`movies.csv` (movieId,title,genres; titles may hold quoted commas) → id → title."""
    path = Path(path)
    frame = read_frame(path, "a MovieLens movies.csv", dtype={"movieId": np.int64,
                                                              "title": str, "genres": str},
                       keep_default_na=False, encoding="utf-8-sig")
    if list(frame.columns) != MOVIES_HEADER:
        raise DataError(f"{path}: header {list(frame.columns)} is not the MovieLens "
                        f"{MOVIES_HEADER}")
    return dict(zip(frame["movieId"].tolist(), frame["title"].tolist(), strict=True))


def read_u_data(path: str | Path) -> RawRatings:
    """ml-100k `u.data`: tab-separated user, item, rating, timestamp; no header."""
    path = Path(path)
    frame = read_frame(path, "an ml-100k u.data", U_DATA, sep="\t", header=None,
                       names=list(DTYPES), dtype=dict(DTYPES))
    return _raw(frame, path, STAR_RANGE, U_DATA)


def read_ratings_dat(path: str | Path) -> RawRatings:
    """ml-1m `ratings.dat`: `UserID::MovieID::Rating::Timestamp`."""
    path = Path(path)
    text = path.read_text(encoding="latin-1").replace("::", "\t")
    try:
        frame = pd.read_csv(StringIO(text), sep="\t", header=None, names=list(DTYPES),
                            dtype=dict(DTYPES), engine="c")
    except READ_ERRORS as exc:
        found = first_bad_line(path, RATINGS_DAT)
        raise DataError(f"{path}: {found}" if found else f"{path}: cannot be read as an ml-1m "
                        f"ratings.dat ({first_line(exc)})") from None
    return _raw(frame, path, STAR_RANGE, RATINGS_DAT)
