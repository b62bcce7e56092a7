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
from dpbandits.data.movielens import read_ratings_csv, read_ratings_dat, read_u_data
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


def _ratings_file(tmp_path, text: str):
    path = tmp_path / "ratings.csv"
    path.write_text(text, encoding="utf-8", newline="")
    return path


@pytest.mark.parametrize("value,problem", [
    ("5.5", "has rating 5.5, outside [0.5, 5]"), ("0.0", "has rating 0.0, outside [0.5, 5]"),
    ("-1.0", "has rating -1.0, outside [0.5, 5]"), ("nan", "has rating nan, outside [0.5, 5]"),
    ("", "has rating '', not a number")])
def test_ratings_off_the_half_star_scale_are_refused_with_their_line(tmp_path, value, problem):
    path = _ratings_file(tmp_path, f"userId,movieId,rating,timestamp\n1,2,3.5,4\n1,3,{value},5\n")
    with pytest.raises(DataError) as err:
        read_ratings_csv(path)
    assert str(err.value) == f"{path}: line 3 {problem}; allowed: 0.5 to 5"


def test_whole_star_files_are_checked_on_their_scale(tmp_path):
    path = tmp_path / "u.data"
    path.write_text("1\t2\t3\t881250949\n1\t3\t6\t881250950\n")
    with pytest.raises(DataError, match=r"line 2 has rating 6, outside \[1, 5\]"):
        read_u_data(path)
    path = tmp_path / "ratings.dat"
    path.write_text("1::2::0::978300760\n")
    with pytest.raises(DataError, match=r"line 1 has rating 0, outside \[1, 5\]"):
        read_ratings_dat(path)


@pytest.mark.parametrize("variant", [{"newline": "\r\n"}, {"trailing_comma": True},
                                     {"newline": "\r\n", "trailing_comma": True, "bom": True},
                                     {"top_folder": False}])
def test_repacked_variants_parse_to_the_same_log(tmp_path, variant):
    upstream = _parse(tmp_path / "a", "ml-latest-small",
                      lambda folder, **kw: write_movielens_zip(folder, "ml-latest-small", **kw))
    variant_log = _parse(tmp_path / "b", "ml-latest-small",
                         lambda folder, **kw: write_movielens_zip(folder, "ml-latest-small",
                                                                  **variant, **kw))
    for name in ("user", "item", "rating", "time", "user_ids", "item_ids"):
        np.testing.assert_array_equal(getattr(variant_log, name), getattr(upstream, name))
    assert variant_log.item_titles == upstream.item_titles


def test_data_lines_with_a_trailing_comma_under_a_plain_header(tmp_path):
    path = _ratings_file(tmp_path, "userId,movieId,rating,timestamp\n1,2,3.5,4,\n1,3,4.0,5,\n")
    raw = read_ratings_csv(path)
    assert raw.rating.tolist() == [3.5, 4.0] and raw.time.tolist() == [4, 5]


@pytest.mark.parametrize("text,needle", [
    ("userId,movieId,rating,timestamp,\n1,2,3.5,4,x\n", "line 2 has a value after the timestamp"),
    ("userId,movieId,rating,timestamp\n1,2,3.5,4\n1,3,4.0,5,,\n",
     "line 3 has 6 fields; expected 4 fields (userId, movieId, rating, timestamp)"),
    ("userId,movieId,rating,timestamp\n1,2,3.5,4\n1,3,4.0\n",
     "line 3 has 3 fields; expected 4 fields (userId, movieId, rating, timestamp)"),
    ("userId,movieId,rating,timestamp\none,2,3.5,4\n", "line 2 has userId 'one', not an integer"),
])
def test_ambiguous_or_broken_csv_is_one_clear_line(tmp_path, text, needle):
    path = _ratings_file(tmp_path, text)
    with pytest.raises(DataError) as err:
        read_ratings_csv(path)
    assert needle in str(err.value) and str(path) in str(err.value)
    assert "\n" not in str(err.value)


def test_a_file_in_no_expected_place_lists_what_the_archive_holds(tmp_path):
    raw = tmp_path / "raw"
    (raw / "ml-latest-small" / "data").mkdir(parents=True)
    (raw / "ml-latest-small" / "data" / "ratings.csv").write_text("x")
    (raw / "notes.txt").write_text("x")
    with pytest.raises(DataError) as err:
        parse_dataset("ml-latest-small", {"ml-latest-small.zip": raw})
    message = str(err.value)
    assert f"{raw / 'ml-latest-small' / 'ratings.csv'} or {raw / 'ratings.csv'}" in message
    assert "it holds: ml-latest-small, notes.txt" in message


def test_one_other_top_folder_is_accepted_but_two_are_ambiguous(tmp_path):
    archive = write_movielens_zip(tmp_path / "mirror", "ml-latest-small", **KW)
    raw = tmp_path / "raw"
    safe_extract(archive, raw)
    (raw / "ml-latest-small").rename(raw / "ml-latest-small-2018")
    log = parse_dataset("ml-latest-small", {archive.name: raw})
    assert len(log.user) == len(movielens_frame(**KW))
    (raw / "copy").mkdir()
    (raw / "copy" / "ratings.csv").write_text("x")
    with pytest.raises(DataError, match="is in several folders"):
        parse_dataset("ml-latest-small", {archive.name: raw})
