"""Fetching archives: mirror folder, file:// URLs, resumed HTTP, and the offline message."""

import http.server
import threading
import time
from dataclasses import replace

import pytest

from dpbandits.data import registry
from dpbandits.data.download import DownloadError, fetch_archive
from dpbandits.data.files import sha256_of
from dpbandits.data.registry import archives

PAYLOAD = bytes(range(256)) * 400


@pytest.fixture
def source(tmp_path, monkeypatch):
    """A mirror folder holding the release the committed table pins (patched to PAYLOAD's)."""
    folder = tmp_path / "mirror"
    folder.mkdir()
    path = folder / "ml-25m.zip"
    path.write_bytes(PAYLOAD)
    spec = replace(archives()["ml-25m.zip"], sha256=sha256_of(path), bytes=len(PAYLOAD), urls=())
    table = {**archives(), spec.file: spec}
    monkeypatch.setattr(registry, "archives", lambda: table)
    return folder, spec


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_mirror_folder_copy(source, tmp_path):
    folder, spec = source
    dest = tmp_path / "root" / "archives" / "ml-25m.zip"
    fetch_archive(spec, dest, mirror=str(folder))
    assert dest.read_bytes() == PAYLOAD
    assert _leftovers(dest.parent) == ["ml-25m.zip"]


def test_file_url_after_a_failing_one(source, tmp_path):
    folder, spec = source
    spec = replace(spec, urls=((folder / "missing.zip").as_uri(), (folder / spec.file).as_uri()))
    dest = tmp_path / "archives" / "ml-25m.zip"
    fetch_archive(spec, dest)
    assert dest.read_bytes() == PAYLOAD


def test_corrupted_source_is_rejected_and_nothing_survives(source, tmp_path):
    folder, spec = source
    data = bytearray(PAYLOAD)
    data[5] ^= 0xFF
    (folder / spec.file).write_bytes(bytes(data))
    dest = tmp_path / "archives" / "ml-25m.zip"
    with pytest.raises(DownloadError, match="does not match the pinned") as err:
        fetch_archive(spec, dest, mirror=str(folder))
    assert _leftovers(dest.parent) == []
    # the message names the mirror's file to replace, not the temporary that no longer exists
    message = str(err.value)
    assert f"{folder / spec.file}: sha256 " in message
    assert f"replace {folder / spec.file} with the pinned release" in message
    assert ".part" not in message and "delete it" not in message


def test_a_bad_url_source_is_named_by_its_url(source, tmp_path):
    folder, spec = source
    (folder / "other.zip").write_bytes(PAYLOAD[:-1] + b"x")
    url = (folder / "other.zip").as_uri()
    with pytest.raises(DownloadError) as err:
        fetch_archive(replace(spec, urls=(url,)), tmp_path / "archives" / "ml-25m.zip")
    assert f"{url}: sha256 " in str(err.value) and ".part" not in str(err.value)


def test_offline_fails_fast_with_one_placement_message(tmp_path):
    spec = replace(archives()["ml-25m.zip"],
                   urls=("https://127.0.0.1:9/ml-25m.zip", (tmp_path / "none.zip").as_uri()))
    dest = tmp_path / "root" / "archives" / "ml-25m.zip"
    start = time.perf_counter()
    with pytest.raises(DownloadError) as err:
        fetch_archive(spec, dest, mirror=str(tmp_path / "empty"), timeout=5)
    assert time.perf_counter() - start < 5
    message = str(err.value)
    assert "\n" not in message
    for needle in (f"Place ml-25m.zip at {dest}", "https://127.0.0.1:9/ml-25m.zip",
                   f"sha256 {spec.sha256}", "261978986 bytes", str(tmp_path / "empty"),
                   "data: mirror:"):
        assert needle in message
    assert _leftovers(dest.parent) == []


def test_offline_message_without_a_mirror_names_the_mirror_option(tmp_path):
    spec = replace(archives()["jester_dataset_2.zip"], urls=((tmp_path / "none.zip").as_uri(),))
    with pytest.raises(DownloadError) as err:
        fetch_archive(spec, tmp_path / "archives" / spec.file)
    assert "or into a folder named by the config's data: mirror: option" in str(err.value)


class _RangeHandler(http.server.BaseHTTPRequestHandler):
    """Serves PAYLOAD, honouring `Range: bytes=N-`; remembers the ranges asked for."""

    ranges: list[str] = []

    def do_GET(self):  # noqa: N802
        header = self.headers.get("Range")
        type(self).ranges.append(header or "")
        start = int(header.split("=")[1].rstrip("-")) if header else 0
        body = PAYLOAD[start:]
        self.send_response(206 if header else 200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_interrupted_http_download_resumes_from_the_part_file(source, tmp_path):
    _, spec = source
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _RangeHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/ml-25m.zip"
        dest = tmp_path / "archives" / "ml-25m.zip"
        dest.parent.mkdir(parents=True)
        dest.with_name("ml-25m.zip.part").write_bytes(PAYLOAD[:4000])
        _RangeHandler.ranges = []
        fetch_archive(replace(spec, urls=(url,)), dest, timeout=5)
    finally:
        server.shutdown()
        server.server_close()
    assert _RangeHandler.ranges == ["bytes=4000-"]
    assert dest.read_bytes() == PAYLOAD
    assert _leftovers(dest.parent) == ["ml-25m.zip"]
