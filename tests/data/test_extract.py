"""Safe extraction: traversal, absolute paths and escaping links are refused, atomically."""

import io
import stat
import tarfile
import zipfile

import pytest

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
