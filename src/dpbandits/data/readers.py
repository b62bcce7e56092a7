"""Shared by the parsers: pandas' CSV reader with its failures turned into one DataError line,
the check that every rating lies on the published scale, and, when either fails, a line-by-line
pass over the text file that names the first bad line (docs/realdata.md, "Parsing")."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpbandits.data import DataError

READ_ERRORS = (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError)
INTEGER = re.compile(r"[+-]?[0-9]+")


def first_line(message: object) -> str:
    """The first line of an exception's text (reader messages can span several)."""
    text = str(message).strip()
    return text.splitlines()[0] if text else "no details"


@dataclass(frozen=True)
class TextLayout:
    """What each line of a text rating file holds: its columns (the rating one a number on
    `allowed`, or one of `also`; the others integers), how a line splits, whether a header
    comes first, and how many fields a line may have (extra ones must be empty)."""

    what: str
    columns: tuple[str, ...]
    rating: int
    allowed: tuple[float, float]
    split: Callable[[str], list[str]]
    header: bool = False
    also: tuple[float, ...] = ()
    width: int | None = None
    encoding: str = "utf-8-sig"

    def expected(self) -> str:
        return f"{len(self.columns)} fields ({', '.join(self.columns)})"

    def scale(self) -> str:
        low, high = self.allowed
        extra = "".join(f" or {v:g}" for v in self.also)
        return f"{low:g} to {high:g}{extra}"


def _line_problem(fields: list[str], layout: TextLayout) -> str | None:
    """What is wrong with one line's fields (None: nothing)."""
    n = len(layout.columns)
    if not n <= len(fields) <= (layout.width or n):
        return f"has {len(fields)} fields; expected {layout.expected()}"
    extra = [f for f in fields[n:] if f.strip()]
    if extra:
        return f"has a value after the {layout.columns[-1]} column ({extra[0]!r}); expected " \
               f"{layout.expected()}"
    for index, (name, value) in enumerate(zip(layout.columns, fields, strict=False)):
        value = value.strip()
        if index == layout.rating:
            try:
                rating = float(value)
            except ValueError:
                return f"has rating {value!r}, not a number; allowed: {layout.scale()}"
            low, high = layout.allowed
            if not (low - 1e-6 <= rating <= high + 1e-6 or rating in layout.also):
                return f"has rating {value}, outside [{low:g}, {high:g}]; allowed: " \
                       f"{layout.scale()}"
        elif not INTEGER.fullmatch(value):
            return f"has {name} {value!r}, not an integer"
    return None


def first_bad_line(path: str | Path, layout: TextLayout) -> str | None:
    """`line N <what is wrong>` for the first bad line of a text rating file (blank lines are
    skipped, as the reader skips them), or None when every line is as the layout says."""
    try:
        with open(path, encoding=layout.encoding, newline="") as handle:
            for number, line in enumerate(handle, start=1):
                if layout.header and number == 1:
                    continue
                text = line.rstrip("\r\n")
                if not text.strip():
                    continue
                problem = _line_problem(layout.split(text), layout)
                if problem:
                    return f"line {number} {problem}"
    except UnicodeDecodeError as exc:
        return f"is not {layout.encoding.removesuffix('-sig').upper()} text ({first_line(exc)})"
    return None


def read_frame(path: str | Path, what: str, layout: TextLayout | None = None,
               **kwargs: Any) -> pd.DataFrame:
    """pandas.read_csv (C engine) with every reader failure turned into one DataError line,
    naming the first bad line when a layout is given."""
    try:
        return pd.read_csv(path, engine="c", **kwargs)
    except READ_ERRORS as exc:
        found = first_bad_line(path, layout) if layout is not None else None
        if found:
            raise DataError(f"{path}: {found}") from None
        raise DataError(f"{path}: cannot be read as {what} ({first_line(exc)})") from None


def check_range(path: str | Path, rating: np.ndarray, allowed: tuple[float, float],
                also: str = "", layout: TextLayout | None = None) -> None:
    """Every rating present and within `allowed`, else one DataError line naming the first bad
    line (with a layout) or giving an example."""
    low, high = allowed
    bad = ~((rating >= low - 1e-6) & (rating <= high + 1e-6))
    if bad.any():
        found = first_bad_line(path, layout) if layout is not None else None
        if found:
            raise DataError(f"{path}: {found}")
        raise DataError(f"{path}: {int(bad.sum())} rating(s) outside [{low:g}, {high:g}] or "
                        f"missing, e.g. {float(rating[bad][0])}; allowed: {low:g} to {high:g}"
                        f"{also}")
