"""Safe extraction of zip and tar archives: no member may land outside the target folder.

Refused: absolute paths, drive letters, `..` components, links whose target leaves the folder,
hard links, device files and FIFOs. The tree is built in a temporary sibling folder and renamed
into place only when every member succeeded.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from dpbandits.atomic import atomic_output
from dpbandits.data import DataError
from dpbandits.data.files import CHUNK

log = logging.getLogger(__name__)
_DRIVE = re.compile(r"^[A-Za-z]:")


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
    with zipfile.ZipFile(archive) as zf:
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
                with zf.open(info) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out, CHUNK)
            names.append(info.filename)
    return names


def _extract_tar(archive: Path, root: Path) -> list[str]:
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
    if zipfile.is_zipfile(archive):
        extract = _extract_zip
    elif tarfile.is_tarfile(archive):
        extract = _extract_tar
    else:
        raise DataError(f"{archive}: neither a zip nor a tar archive")
    with atomic_output(target) as tmp:
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        names = extract(archive, tmp.resolve())
    log.info("%s: %d members extracted into %s", archive.name, len(names), target)
    return names
