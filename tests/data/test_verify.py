"""Size and sha256 verification; the stamp exists only after a successful check."""

import json
import logging
from dataclasses import replace

import pytest

from dpbandits.data import registry
from dpbandits.data.files import sha256_of
from dpbandits.data.registry import archives
from dpbandits.data.verify import VerificationError, verify_archive


@pytest.fixture
def archive(tmp_path):
    path = tmp_path / "ml-25m.zip"
    path.write_bytes(bytes(range(256)) * 40)
    spec = replace(archives()["ml-25m.zip"], sha256=sha256_of(path), bytes=path.stat().st_size)
    return path, spec


def test_good_archive_gets_a_stamp(archive, tmp_path, monkeypatch):
    path, spec = archive
    table = {**archives(), spec.file: spec}  # this archive is the committed table's release
    monkeypatch.setattr(registry, "archives", lambda: table)
    stamp = tmp_path / "stamp.json"
    verify_archive(path, spec, stamp)
    record = json.loads(stamp.read_text())
    assert record["sha256"] == spec.sha256 and record["bytes"] == spec.bytes and record["pinned"]
    assert record["pinned_sha256"] == spec.sha256


def test_an_overridden_checksum_verifies_but_is_not_pinned(archive, tmp_path, caplog):
    path, spec = archive  # spec carries a config override of the sha256 and size
    with caplog.at_level(logging.WARNING):
        record = verify_archive(path, spec, tmp_path / "stamp.json")
    assert record["sha256"] == sha256_of(path) and record["pinned"] is False
    assert record["pinned_sha256"] == archives()["ml-25m.zip"].sha256
    assert "not the pinned release" in caplog.text and "not comparable" in caplog.text


def _flip(path):
    data = bytearray(path.read_bytes())
    data[1000] ^= 0x01
    path.write_bytes(bytes(data))


def test_one_corrupted_byte_of_the_pinned_release_fails_with_a_clear_message(archive, tmp_path,
                                                                             monkeypatch):
    path, spec = archive
    table = {**archives(), spec.file: spec}  # the committed table pins this archive
    monkeypatch.setattr(registry, "archives", lambda: table)
    stamp = tmp_path / "stamp.json"
    stamp.write_text("{}")  # a stale stamp must not survive a failed check
    _flip(path)
    with pytest.raises(VerificationError) as err:
        verify_archive(path, spec, stamp)
    message = str(err.value)
    assert f"does not match the pinned {spec.sha256} of ml-25m.zip" in message
    assert sha256_of(path) in message and str(path) in message
    assert "delete it and re-run" in message and "\n" not in message
    assert f"set data: files: ml-25m.zip: sha256: {sha256_of(path)}" in message
    assert "override" not in message.split(";")[0]
    assert not stamp.exists()


def test_a_mismatch_with_an_overridden_checksum_names_the_override(archive, tmp_path):
    path, spec = archive  # spec's sha256 and size are config overrides, not the table's
    stamp = tmp_path / "stamp.json"
    _flip(path)
    with pytest.raises(VerificationError) as err:
        verify_archive(path, spec, stamp)
    message = str(err.value)
    assert (f"{path}: sha256 {sha256_of(path)} does not match {spec.sha256}, the value of the "
            "config override data: files: ml-25m.zip: sha256 (a typo in the override") in message
    assert "pinned" not in message.split(";")[0] and "\n" not in message
    assert not stamp.exists()
    with open(path, "ab") as handle:
        handle.write(b"x")
    with pytest.raises(VerificationError) as err:
        verify_archive(path, spec, stamp)
    assert (f"{path}: {spec.bytes + 1} bytes, but the config override data: files: ml-25m.zip: "
            f"bytes says {spec.bytes}") in str(err.value)


def test_wrong_size_is_reported_before_hashing(archive, tmp_path, monkeypatch):
    path, spec = archive
    table = {**archives(), spec.file: spec}  # the committed table pins this archive
    monkeypatch.setattr(registry, "archives", lambda: table)
    with open(path, "ab") as handle:
        handle.write(b"x")
    with pytest.raises(VerificationError, match=f"must have {spec.bytes} bytes") as err:
        verify_archive(path, spec, tmp_path / "stamp.json")
    assert f"set data: files: ml-25m.zip: sha256: {sha256_of(path)}" in str(err.value)


def test_unpinned_checksum_is_computed_and_printed(archive, tmp_path, caplog):
    path, spec = archive
    spec = replace(spec, sha256=None, bytes=None)
    with caplog.at_level(logging.WARNING):
        record = verify_archive(path, spec, tmp_path / "stamp.json")
    assert record["sha256"] == sha256_of(path) and record["pinned"] is False
    assert sha256_of(path) in caplog.text and "not pinned" in caplog.text


def test_the_pinned_release_with_an_unknown_size_prints_its_size(archive, tmp_path, caplog,
                                                                  monkeypatch):
    path, spec = archive
    spec = replace(spec, file="jester_dataset_2.zip", dataset="jester-2", bytes=None)
    table = {**archives(), spec.file: spec}  # jester-2's size is "unknown" in the table
    monkeypatch.setattr(registry, "archives", lambda: table)
    with caplog.at_level(logging.WARNING):
        record = verify_archive(path, spec, tmp_path / "stamp.json")
    assert record["pinned"] is True
    assert f"the pinned release has {path.stat().st_size} bytes - pin it" in caplog.text
