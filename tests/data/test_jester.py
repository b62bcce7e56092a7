"""Jester parsers: dataset 2 `.dat`, dataset 1 `.xls` (and `.xlsx`), 99 = not rated."""

import numpy as np
import pytest
from rating_fixtures import (
    jester_frame,
    jester_matrix,
    write_jester1_zips,
    write_jester2_zip,
    xls_bytes,
    xlsx_bytes,
)

from dpbandits.data import DataError
from dpbandits.data.extract import safe_extract
from dpbandits.data.jester import read_matrix, read_ratings_dat
from dpbandits.data.parse import parse_dataset


def test_dataset_2_dat(tmp_path):
    archive = write_jester2_zip(tmp_path, n_users=30, n_items=150, density=0.2)
    safe_extract(archive, tmp_path / "raw")
    log = parse_dataset("jester-2", {archive.name: tmp_path / "raw"})
    frame = jester_frame(30, 150, 0.2)
    assert len(log.user) == len(frame) and log.time is None
    np.testing.assert_allclose(log.rating, frame["rating"].to_numpy(), atol=1e-5)  # file order
    assert log.rating.min() >= -10 and log.rating.max() <= 10


def test_dat_drops_unrated_marker_and_checks_range(tmp_path):
    path = tmp_path / "jester_ratings.dat"
    path.write_text("1\t\t5\t\t0.219\n1\t\t7\t\t99\n2\t\t5\t\t-9.69\n")
    raw = read_ratings_dat(path)
    assert raw.rating.tolist() == pytest.approx([0.219, -9.69])
    path.write_text("1\t\t5\t\t12.5\n")
    with pytest.raises(DataError, match="outside"):
        read_ratings_dat(path)


@pytest.mark.parametrize("suffix,writer", [(".xls", xls_bytes), (".xlsx", xlsx_bytes)])
def test_matrix_workbooks(tmp_path, suffix, writer):
    matrix = jester_matrix(12, 100, 0.4, seed=5)
    path = tmp_path / f"jester-data-1{suffix}"
    path.write_bytes(writer(matrix))
    raw = read_matrix(path, user_offset=7)
    rows, cols = np.nonzero(matrix[:, 1:] != 99.0)
    np.testing.assert_array_equal(raw.user, rows + 7)
    np.testing.assert_array_equal(raw.item, cols + 1)
    np.testing.assert_allclose(raw.rating, matrix[:, 1:][rows, cols], atol=1e-5)
    assert 99.0 not in raw.rating


def test_dataset_1_three_workbooks_have_disjoint_users(tmp_path):
    archives = write_jester1_zips(tmp_path / "mirror", n_users=15)
    dirs = {}
    for archive in archives:
        safe_extract(archive, tmp_path / archive.stem)
        dirs[archive.name] = tmp_path / archive.stem
    log = parse_dataset("jester-1", dirs)
    expected = sum(int(jester_matrix(15, seed=10 + i)[:, 0].sum()) for i in (1, 2, 3))
    assert len(log.user) == expected
    assert log.n_users == 45 and log.n_items <= 100


@pytest.mark.parametrize("content", [
    b"<html><body>jester-data-1</body></html>",  # a web page saved under the .xls name
    b"PK\x03\x04" + bytes(200),  # a broken zip container (.xlsx-like)
    b"",
])
def test_a_non_excel_xls_is_one_data_error_line(tmp_path, content):
    path = tmp_path / "jester-data-1.xls"
    path.write_bytes(content)
    with pytest.raises(DataError) as err:
        read_matrix(path)
    message = str(err.value)
    assert message.startswith(f"{path}: cannot be read as an Excel workbook")
    assert "\n" not in message


def test_a_text_cell_in_a_workbook_is_one_data_error_line(tmp_path):
    import xlwt

    book = xlwt.Workbook()
    sheet = book.add_sheet("s")
    for j, value in enumerate([2, 1.5, "funny"]):
        sheet.write(0, j, value)
    path = tmp_path / "jester-data-1.xls"
    book.save(str(path))
    with pytest.raises(DataError, match="non-numeric cells"):
        read_matrix(path)


@pytest.mark.parametrize("text,needle", [
    ("1\t\t5\t\t0.5\n2\t\t5\t\tfunny\n",
     "line 2 has rating 'funny', not a number; allowed: -10 to 10 or 99"),
    ("1\t\t5\t\t0.5\n1\t\t5\n", "line 2 has 2 fields; expected 3 fields (user, joke, rating)"),
    ("1\t\t5\t\t0.5\n\n3\t\t5\t\t12.5\n",
     "line 3 has rating 12.5, outside [-10, 10]; allowed: -10 to 10 or 99"),
    ("1\t\t5\t\t0.5\nx\t\t5\t\t1.5\n", "line 2 has user 'x', not an integer"),
])
def test_a_broken_dat_is_one_data_error_line_naming_the_line(tmp_path, text, needle):
    path = tmp_path / "jester_ratings.dat"
    path.write_text(text)
    with pytest.raises(DataError) as err:
        read_ratings_dat(path)
    assert str(err.value) == f"{path}: {needle}"


@pytest.mark.parametrize("variant", [{"inner": "jester_dataset_2"}, {"newline": "\r\n"}])
def test_dataset_2_repacked_variants(tmp_path, variant):
    archive = write_jester2_zip(tmp_path, n_users=30, n_items=150, density=0.2, **variant)
    safe_extract(archive, tmp_path / "raw")
    log = parse_dataset("jester-2", {archive.name: tmp_path / "raw"})
    np.testing.assert_allclose(log.rating, jester_frame(30, 150, 0.2)["rating"].to_numpy(),
                               atol=1e-5)
