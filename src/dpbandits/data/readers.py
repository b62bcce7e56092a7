"""Shared by the parsers: pandas' CSV reader with its failures turned into one DataError line,
and the check that every rating lies on the published scale."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpbandits.data import DataError

READ_ERRORS = (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError)


def first_line(message: object) -> str:
    """The first line of an exception's text (reader messages can span several)."""
    text = str(message).strip()
    return text.splitlines()[0] if text else "no details"


def read_frame(path: str | Path, what: str, **kwargs: Any) -> pd.DataFrame:
    """pandas.read_csv (C engine) with every reader failure turned into one DataError line."""
    try:
        return pd.read_csv(path, engine="c", **kwargs)
    except READ_ERRORS as exc:
        raise DataError(f"{path}: cannot be read as {what} ({first_line(exc)})") from None


def check_range(path: str | Path, rating: np.ndarray, allowed: tuple[float, float],
                also: str = "") -> None:
    """Every rating present and within `allowed`, else one DataError line with an example."""
    low, high = allowed
    bad = ~((rating >= low - 1e-6) & (rating <= high + 1e-6))
    if bad.any():
        raise DataError(f"{path}: {int(bad.sum())} rating(s) outside [{low:g}, {high:g}] or "
                        f"missing, e.g. {float(rating[bad][0])}; allowed: {low:g} to {high:g}"
                        f"{also}")
