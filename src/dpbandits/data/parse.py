"""Dataset name → parser of its extracted archives (inner paths as published upstream)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dpbandits.data import DataError, jester, movielens
from dpbandits.data.ratings import RatingLog, RawRatings, build_log
from dpbandits.data.registry import datasets

log = logging.getLogger(__name__)


def locate(folder: Path, inner: str, top: str | None = None) -> Path:
    """An extracted file: at its upstream place (`<folder>/<top>/<inner>`, or `<folder>/<inner>`
    when the archive has no top-level folder), else at the other of these two places, else in
    the one top-level folder that holds it (re-packed archives); one DataError line otherwise."""
    places = [folder / top / inner, folder / inner] if top else [folder / inner]
    for path in places:
        if path.is_file():
            return path
    found = sorted(p for p in folder.glob(f"*/{inner}") if p.is_file()) if folder.is_dir() else []
    if len(found) == 1:
        log.info("%s: found at %s (not the upstream layout)", inner, found[0])
        return found[0]
    expected = " or ".join(str(p) for p in places)
    if found:
        raise DataError(f"{folder}: {inner} is in several folders ({', '.join(map(str, found))}); "
                        f"expected exactly one, at {expected}")
    listing = sorted(p.name for p in folder.iterdir())[:8] if folder.is_dir() else []
    raise DataError(f"{expected}: expected file is missing from the extracted archive "
                    f"(it holds: {', '.join(listing) or 'nothing'})")


def _movielens_csv(name: str) -> Callable[[dict[str, Path]], RawRatings]:
    def parse(dirs: dict[str, Path]) -> RawRatings:
        ratings = locate(dirs[f"{name}.zip"], "ratings.csv", name)
        raw = movielens.read_ratings_csv(ratings)
        movies = ratings.parent / "movies.csv"
        if movies.is_file():
            raw.titles = movielens.read_movies_csv(movies)
            raw.sources.append(str(movies))
        return raw

    return parse


def _ml_100k(dirs: dict[str, Path]) -> RawRatings:
    return movielens.read_u_data(locate(dirs["ml-100k.zip"], "u.data", "ml-100k"))


def _ml_1m(dirs: dict[str, Path]) -> RawRatings:
    return movielens.read_ratings_dat(locate(dirs["ml-1m.zip"], "ratings.dat", "ml-1m"))


def _jester_1(dirs: dict[str, Path]) -> RawRatings:
    parts, offset = [], 0
    for i in (1, 2, 3):
        raw = jester.read_matrix(locate(dirs[f"jester_dataset_1_{i}.zip"], f"jester-data-{i}.xls"),
                                 user_offset=offset)
        offset = int(raw.user.max()) + 1 if len(raw.user) else offset
        parts.append(raw)
    return RawRatings(
        user=np.concatenate([p.user for p in parts]),
        item=np.concatenate([p.item for p in parts]),
        rating=np.concatenate([p.rating for p in parts]),
        sources=[s for p in parts for s in p.sources],
    )


def _jester_2(dirs: dict[str, Path]) -> RawRatings:
    return jester.read_ratings_dat(locate(dirs["jester_dataset_2.zip"], "jester_ratings.dat"))


PARSERS: dict[str, Callable[[dict[str, Path]], RawRatings]] = {
    "ml-25m": _movielens_csv("ml-25m"),
    "ml-latest-small": _movielens_csv("ml-latest-small"),
    "ml-100k": _ml_100k,
    "ml-1m": _ml_1m,
    "jester-1": _jester_1,
    "jester-2": _jester_2,
}


def parse_dataset(dataset: str, raw_dirs: dict[str, str | Path]) -> RatingLog:
    """Parse the extracted archives of `dataset` (archive file name → extraction folder)."""
    if dataset not in PARSERS:
        raise DataError(f"no parser for dataset {dataset!r}; known: {', '.join(PARSERS)}")
    missing = sorted(set(datasets()[dataset]) - set(raw_dirs))
    if missing:
        raise DataError(f"{dataset}: extracted archive(s) {', '.join(missing)} not given")
    raw = PARSERS[dataset]({k: Path(v) for k, v in raw_dirs.items()})
    result = build_log(dataset, raw)
    log.info("%s: %d ratings, %d users, %d items, order %s", dataset, len(result.user),
             result.n_users, result.n_items, "time" if result.time is not None else "file")
    return result
