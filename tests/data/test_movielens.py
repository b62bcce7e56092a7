"""MovieLens parsers on archives in the upstream layouts."""

import numpy as np
import pytest
from rating_fixtures import (
    TITLES,
    movielens_frame,
    write_ml1m_zip,
    write_ml100k_zip,
    write_movielens_zip,
)

from dpbandits.data import DataError
from dpbandits.data.extract import safe_extract
from dpbandits.data.movielens import read_ratings_csv
from dpbandits.data.parse import parse_dataset

KW = {"n_users": 40, "n_items": 30, "density": 0.3}


def _parse(tmp_path, dataset, writer):
    archive = writer(tmp_path / "mirror", **KW)
    raw = tmp_path / "raw"
    safe_extract(archive, raw)
    return parse_dataset(dataset, {archive.name: raw})


def test_ml25m_csv_with_quoted_titles(tmp_path):
    log = _parse(tmp_path, "ml-25m", write_movielens_zip)
    frame = movielens_frame(**KW)
    assert len(log.user) == len(frame) and log.n_users == frame["userId"].nunique()
    np.testing.assert_array_equal(log.item_ids, np.sort(frame["movieId"].unique()))
    assert log.item_titles[:len(TITLES)] == TITLES  # quoted commas and doubled quotes kept
    assert np.all(np.diff(log.time) >= 0)  # replay order: by time, not by user
    np.testing.assert_array_equal(np.sort(log.time), np.sort(frame["timestamp"].to_numpy()))
    # each (user, item, rating) cell survives the re-indexing
    got = set(zip(log.user_ids[log.user], log.item_ids[log.item], log.rating.tolist(),
                  strict=True))
    want = set(zip(frame["userId"], frame["movieId"], frame["rating"].astype(np.float32).tolist(),
                   strict=True))
    assert got == want


@pytest.mark.parametrize("dataset,writer", [("ml-100k", write_ml100k_zip),
                                            ("ml-1m", write_ml1m_zip)])
def test_older_formats(tmp_path, dataset, writer):
    log = _parse(tmp_path, dataset, writer)
    frame = movielens_frame(**KW)
    assert len(log.user) == len(frame)
    assert set(np.unique(log.rating)) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    assert np.all(np.diff(log.time) >= 0)


def test_wrong_header_is_refused(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text("user,movie,rating,timestamp\n1,2,3.0,4\n")
    with pytest.raises(DataError, match="header"):
        read_ratings_csv(path)


def test_missing_inner_file_names_the_path(tmp_path):
    raw = tmp_path / "raw"
    (raw / "ml-25m").mkdir(parents=True)
    with pytest.raises(DataError, match="ratings.csv"):
        parse_dataset("ml-25m", {"ml-25m.zip": raw})
