"""The stage runner used by the Snakemake scripts: one error line, exit code 1, a log file."""

import logging
from dataclasses import replace

import pytest

from dpbandits.data import pipeline, registry
from dpbandits.data.files import sha256_of


@pytest.fixture
def restore_logging():
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in root.handlers:
        if handler not in handlers:
            handler.close()
    root.handlers[:] = handlers
    root.setLevel(level)


def test_stage_error_is_one_line_and_exit_1(tmp_path, capsys, restore_logging):
    log_path = tmp_path / "stage.log"
    with pytest.raises(SystemExit) as exit_info:
        pipeline.run(pipeline.download, log_path, file="ml-25m.zip",
                     output=tmp_path / "archives" / "ml-25m.zip",
                     data={"mirror": str(tmp_path), "files": {"ml-25m.zip": {"urls": []}}})
    assert exit_info.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dpbandits: error: cannot fetch ml-25m.zip")
    assert "Place ml-25m.zip at" in log_path.read_text()
    assert not (tmp_path / "archives" / "ml-25m.zip").exists()



def test_unpinned_checksum_is_printed_on_stderr(tmp_path, capsys, restore_logging, monkeypatch):
    table = dict(registry.archives())
    table["jester_dataset_2.zip"] = replace(table["jester_dataset_2.zip"], sha256=None)
    monkeypatch.setattr(registry, "archives", lambda: table)
    archive = tmp_path / "jester_dataset_2.zip"
    archive.write_bytes(b"some release")
    pipeline.run(pipeline.verify, tmp_path / "v.log", file="jester_dataset_2.zip",
                 archive=archive, stamp=tmp_path / "stamp.json", data=None)
    err = capsys.readouterr().err
    assert f"computed {sha256_of(archive)}" in err and "not pinned" in err
    assert (tmp_path / "stamp.json").is_file()


def test_non_excel_xls_is_one_line_from_the_parse_stage(tmp_path, capsys, restore_logging):
    dirs = {}
    for i in (1, 2, 3):
        folder = tmp_path / f"jester_dataset_1_{i}"
        folder.mkdir()
        (folder / f"jester-data-{i}.xls").write_bytes(b"not a workbook\n")
        dirs[f"jester_dataset_1_{i}.zip"] = str(folder)
    with pytest.raises(SystemExit) as exit_info:
        pipeline.run(pipeline.parse, tmp_path / "parse.log", dataset="jester-1", raw_dirs=dirs,
                     output=tmp_path / "ratings.h5")
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpbandits: error: ")
    assert "cannot be read as an Excel workbook" in lines[0] and "Traceback" not in err
    assert not (tmp_path / "ratings.h5").exists()
