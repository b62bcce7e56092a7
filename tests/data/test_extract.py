"""Safe extraction: traversal, absolute paths and escaping links are refused, atomically; damaged
and truncated archives are one clear line."""

import io
import stat
import struct
import tarfile
import zipfile

import pytest

from dpbandits.data import DataError
from dpbandits.data.extract import UnsafeArchiveError, safe_extract


def _zip(path, members, links=()):
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        for name, target in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return path


def _tar(path, files=(), links=(), hardlinks=()):
    with tarfile.open(path, "w:gz") as tf:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for name, target, kind in [(n, t, tarfile.SYMTYPE) for n, t in links] + \
                [(n, t, tarfile.LNKTYPE) for n, t in hardlinks]:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, target
            tf.addfile(info)
    return path


def test_upstream_style_zip_extracts(tmp_path):
    archive = _zip(tmp_path / "a.zip", {"ml-25m/ratings.csv": "userId\n", "ml-25m/x.txt": "x"})
    names = safe_extract(archive, tmp_path / "out")
    assert sorted(names) == ["ml-25m/ratings.csv", "ml-25m/x.txt"]
    assert (tmp_path / "out" / "ml-25m" / "ratings.csv").read_text() == "userId\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.zip", "out"]


def test_tar_with_an_inside_link_extracts(tmp_path):
    archive = _tar(tmp_path / "a.tar.gz", files=[("d/f.txt", b"hi")], links=[("d/l", "f.txt")])
    safe_extract(archive, tmp_path / "out")
    assert (tmp_path / "out" / "d" / "l").read_text() == "hi"


@pytest.mark.parametrize("make", [
    lambda p: _zip(p / "a.zip", {"ok.txt": "1", "../evil.txt": "x"}),
    lambda p: _zip(p / "a.zip", {"ok.txt": "1", "d/../../evil.txt": "x"}),
    lambda p: _zip(p / "a.zip", {"ok.txt": "1", "/tmp/evil.txt": "x"}),
    lambda p: _zip(p / "a.zip", {"ok.txt": "1", "C:\\evil.txt": "x"}),
    lambda p: _zip(p / "a.zip", {"ok.txt": "1"}, links=[("l", "../../etc")]),
    lambda p: _tar(p / "a.tgz", files=[("ok.txt", b"1")], links=[("l", "/etc/passwd")]),
    lambda p: _tar(p / "a.tgz", files=[("ok.txt", b"1")], links=[("l", "../..")]),
    lambda p: _tar(p / "a.tgz", files=[("ok.txt", b"1"), ("../evil.txt", b"x")]),
    lambda p: _tar(p / "a.tgz", files=[("ok.txt", b"1")], hardlinks=[("h", "/etc/passwd")]),
], ids=["zip-dotdot", "zip-inner-dotdot", "zip-absolute", "zip-drive", "zip-symlink-out",
        "tar-abs-symlink", "tar-symlink-up", "tar-dotdot", "tar-hardlink"])
def test_unsafe_members_are_refused_and_nothing_is_left(tmp_path, make):
    src = tmp_path / "src"
    src.mkdir()
    archive = make(src)
    target = tmp_path / "box" / "out"
    target.parent.mkdir()
    with pytest.raises(UnsafeArchiveError, match="refusing to extract"):
        safe_extract(archive, target)
    assert list(target.parent.iterdir()) == []
    assert not (tmp_path / "evil.txt").exists() and not (tmp_path / "box" / "evil.txt").exists()


# --- damaged archives: one line naming the archive, nothing extracted ---------------------------

DATA = bytes(range(256)) * 400
MEMBER = "ml-25m/ratings.csv"


def _damaged_zip(path, how):
    """A zip of one member, damaged `how`: its deflate stream broken (zlib.error), one data byte
    flipped (BadZipFile: bad CRC), its recorded size past the end of the file (EOFError)."""
    stored = how in ("eof", "crc")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(MEMBER, DATA)
    data = bytearray(path.read_bytes())
    start = 30 + len(MEMBER)  # the member's data follows its local header
    if how == "zlib":
        data[start:start + 4] = b"\xff\xff\xff\xff"
    elif how == "crc":
        data[start + 100] ^= 0xFF
    else:
        central = data.find(b"PK\x01\x02")
        size = struct.pack("<I", 10 * len(DATA))
        data[18:26] = size + size
        data[central + 20:central + 28] = size + size
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("how,error", [("zlib", "error"), ("crc", "BadZipFile"),
                                       ("eof", "EOFError")])
def test_a_corrupt_member_is_one_line_and_nothing_is_left(tmp_path, how, error):
    archive = _damaged_zip(tmp_path / "ml-25m.zip", how)
    target = tmp_path / "raw" / "ml-25m"
    with pytest.raises(DataError) as err:
        safe_extract(archive, target)
    message = str(err.value)
    assert message.startswith(f"{archive}: member '{MEMBER}' is corrupt ({error}: ")
    assert "delete it and re-run" in message and "\n" not in message
    assert list((tmp_path / "raw").iterdir()) == []


def test_negative_control_the_undamaged_zip_extracts(tmp_path):
    archive = _zip(tmp_path / "ml-25m.zip", {MEMBER: DATA})
    safe_extract(archive, tmp_path / "raw")
    assert (tmp_path / "raw" / MEMBER).read_bytes() == DATA


@pytest.mark.parametrize("name,kind", [("ml-25m.zip", "truncated zip archive"),
                                       ("a.tar.gz", "truncated or corrupt tar archive")])
def test_a_truncated_archive_is_called_truncated(tmp_path, name, kind):
    whole = tmp_path / f"whole-{name}"
    if name.endswith(".zip"):
        _zip(whole, {MEMBER: DATA})
    else:
        _tar(whole, files=[(MEMBER, DATA)])
    archive = tmp_path / name
    archive.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    with pytest.raises(DataError) as err:
        safe_extract(archive, tmp_path / "raw" / "x")
    message = str(err.value)
    assert message.startswith(f"{archive}: {kind}") and "neither" not in message
    assert "delete it and re-run" in message and "\n" not in message
    assert not (tmp_path / "raw").exists() or list((tmp_path / "raw").iterdir()) == []


def test_a_file_that_is_no_archive_at_all_says_so(tmp_path):
    archive = tmp_path / "ml-25m.zip"
    archive.write_bytes(b"<html>not found</html>")
    with pytest.raises(DataError, match="neither a zip nor a tar archive"):
        safe_extract(archive, tmp_path / "raw")
