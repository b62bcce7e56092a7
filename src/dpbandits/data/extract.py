"""Safe extraction of zip and tar archives: no member may land outside the target folder.

Refused: absolute paths, drive letters, `..` components, links whose target leaves the folder,
hard links, device files and FIFOs. The tree is built in a temporary sibling folder and renamed
into place only when every member succeeded. A truncated archive, or a member whose compressed
data is corrupt, is one DataError line naming the archive (and the member) and what to do.
"""

from __future__ import annotations

import gzip
import logging
import lzma
import os
import re
import shutil
import stat
import tarfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from dpbandits.atomic import atomic_output
from dpbandits.data import DataError
from dpbandits.data.files import CHUNK
from dpbandits.data.readers import first_line

log = logging.getLogger(__name__)
_DRIVE = re.compile(r"^[A-Za-z]:")
CORRUPT = (zlib.error, zipfile.BadZipFile, EOFError, tarfile.TarError, lzma.LZMAError,
           gzip.BadGzipFile)
"""What reading a damaged archive raises (bz2 raises an OSError without an errno too)."""
REFETCH = "delete it and re-run to fetch it again, or place a complete copy"
COMPRESSED_TAR = {b"\x1f\x8b": "gzip", b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz"}


class UnsafeArchiveError(DataError):
    """An archive member would be written outside the extraction folder."""


def _inside(root: Path, path: Path) -> bool:
    return path == root or root in path.parents


def member_path(root: Path, name: str, archive: Path) -> Path:
    """The destination of member `name` under `root`, or UnsafeArchiveError."""
    clean = name.replace("\\", "/")
    parts = PurePosixPath(clean).parts
    if clean.startswith("/") or _DRIVE.match(clean) or ".." in parts:
        raise UnsafeArchiveError(f"{archive}: member {name!r} would be written outside the "
                                 "extraction folder; refusing to extract")
    target = root.joinpath(*[p for p in parts if p not in ("", ".")])
    if not _inside(root.resolve(), target.resolve()):
        raise UnsafeArchiveError(f"{archive}: member {name!r} resolves outside the extraction "
                                 "folder (through a link); refusing to extract")
    return target


def _check_link(root: Path, link: Path, link_target: str, name: str, archive: Path) -> None:
    if link_target.startswith("/") or _DRIVE.match(link_target):
        raise UnsafeArchiveError(f"{archive}: link {name!r} -> {link_target!r} is absolute; "
                                 "refusing to extract")
    resolved = (link.parent / link_target).resolve()
    if not _inside(root.resolve(), resolved):
        raise UnsafeArchiveError(f"{archive}: link {name!r} -> {link_target!r} points outside "
                                 "the extraction folder; refusing to extract")


def _extract_zip(archive: Path, root: Path) -> list[str]:
    names = []
    try:
        zf = zipfile.ZipFile(archive)
    except CORRUPT as exc:
        raise DataError(f"{archive}: corrupt zip archive ({type(exc).__name__}: "
                        f"{first_line(exc)}); {REFETCH}") from None
    with zf:
        for info in zf.infolist():
            target = member_path(root, info.filename, archive)
            mode = info.external_attr >> 16
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if stat.S_ISLNK(mode):
                link_target = zf.read(info).decode("utf-8")
                _check_link(root, target, link_target, info.filename, archive)
                os.symlink(link_target, target)
            else:
                try:
                    with zf.open(info) as src, open(target, "wb") as out:
                        shutil.copyfileobj(src, out, CHUNK)
                except (*CORRUPT, OSError) as exc:
                    if not _damaged(exc):
                        raise
                    raise _corrupt(archive, info.filename, exc) from None
            names.append(info.filename)
    return names


def _damaged(exc: BaseException) -> bool:
    """A read error of damaged data (not, say, a full disk: that OSError has an errno)."""
    return isinstance(exc, CORRUPT) or (isinstance(exc, OSError) and exc.errno is None)


def _corrupt(archive: Path, member: str, exc: BaseException) -> DataError:
    detail = first_line(exc) if str(exc).strip() else "its data ends before its recorded size"
    return DataError(f"{archive}: member {member!r} is corrupt ({type(exc).__name__}: "
                     f"{detail}); the archive is damaged: {REFETCH}")


def _kind(archive: Path) -> str:
    """`zip` or `tar`, else one DataError line: truncated (a zip without its end record, a
    compressed or plain tar cut short) or neither a zip nor a tar."""
    if zipfile.is_zipfile(archive):
        return "zip"
    try:
        if tarfile.is_tarfile(archive):
            return "tar"
    except (*CORRUPT, OSError):
        pass
    with open(archive, "rb") as handle:
        head = handle.read(512)
    size = archive.stat().st_size
    if head.startswith(b"PK\x03\x04"):
        raise DataError(f"{archive}: truncated zip archive ({size} bytes; its end-of-archive "
                        f"record is missing); {REFETCH}")
    for magic, name in COMPRESSED_TAR.items():
        if head.startswith(magic):
            raise DataError(f"{archive}: truncated or corrupt {name}-compressed archive "
                            f"({size} bytes); {REFETCH}")
    if head[257:262] == b"ustar":
        raise DataError(f"{archive}: truncated tar archive ({size} bytes); {REFETCH}")
    raise DataError(f"{archive}: neither a zip nor a tar archive ({size} bytes); expected the "
                    "archive as published")


def _extract_tar(archive: Path, root: Path) -> list[str]:
    try:
        return _extract_tar_members(archive, root)
    except (*CORRUPT, OSError) as exc:
        if not _damaged(exc):
            raise
        raise DataError(f"{archive}: truncated or corrupt tar archive ({type(exc).__name__}: "
                        f"{first_line(exc)}); {REFETCH}") from None


def _extract_tar_members(archive: Path, root: Path) -> list[str]:
    names = []
    with tarfile.open(archive) as tf:
        for member in tf:
            target = member_path(root, member.name, archive)
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if member.issym():
                _check_link(root, target, member.linkname, member.name, archive)
                os.symlink(member.linkname, target)
            elif member.isfile():
                src = tf.extractfile(member)
                assert src is not None
                with src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out, CHUNK)
            else:
                kind = "hard link" if member.islnk() else "special file"
                raise UnsafeArchiveError(f"{archive}: member {member.name!r} is a {kind}; "
                                         "refusing to extract")
            names.append(member.name)
    return names


def safe_extract(archive: str | Path, target: str | Path) -> list[str]:
    """Extract `archive` (zip or tar, any compression) into `target`; returns member names."""
    archive, target = Path(archive), Path(target)
    extract = _extract_zip if _kind(archive) == "zip" else _extract_tar
    with atomic_output(target) as tmp:
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        names = extract(archive, tmp.resolve())
    log.info("%s: %d members extracted into %s", archive.name, len(names), target)
    return names
