"""Archive verification against the pinned size and sha256; a stamp file records success and
whether the archive is the release pinned in `datasets.tsv` (docs/realdata.md, "Provenance")."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from dpbandits.data import DataError, registry
from dpbandits.data.files import sha256_of, write_json
from dpbandits.data.registry import ArchiveSpec, pinned_sha256

log = logging.getLogger(__name__)
IN_PLACE_ADVICE = "delete it and re-run"


class VerificationError(DataError):
    """An archive's size or sha256 differs from the pinned value."""


def _override_hint(spec: ArchiveSpec, digest: str) -> str:
    return (f"to use this release instead, set data: files: {spec.file}: sha256: {digest} "
            "(its results are then marked not comparable)")


def overridden(spec: ArchiveSpec, field: str) -> bool:
    """Whether `spec`'s value of `field` (sha256 or bytes) comes from a config override rather
    than the committed table."""
    table = registry.archives().get(spec.file)
    return table is None or getattr(table, field) != getattr(spec, field)


def release_words(spec: ArchiveSpec) -> str:
    """How messages name the release an archive must be: the pinned one, or the override's."""
    return "the release the config override names" if overridden(spec, "sha256") \
        else "the pinned release"


def check_archive(path: str | Path, spec: ArchiveSpec, name: str | None = None,
                  advice: str = IN_PLACE_ADVICE) -> str:
    """Size, then sha256 of `path` against `spec`; returns the sha256 or raises one clear line
    naming `name` (default: `path`) and what to do with it.

    An unpinned sha256 (None) is computed and logged so that it can be pinned in the table.
    """
    path = Path(path)
    shown = name or str(path)
    size = path.stat().st_size
    if spec.bytes is not None and size != spec.bytes:
        if overridden(spec, "bytes"):
            expected = (f"the config override data: files: {spec.file}: bytes says {spec.bytes} "
                        "(a typo in the override, or a truncated file?)")
        else:
            expected = (f"{spec.file} must have {spec.bytes} bytes (truncated or not the pinned "
                        "release)")
        raise VerificationError(f"{shown}: {size} bytes, but {expected}; {advice}; "
                                f"{_override_hint(spec, sha256_of(path))}")
    digest = sha256_of(path)
    if spec.sha256 is None:
        log.warning("%s: sha256 is not pinned; computed %s (%d bytes) - pin it in datasets.tsv",
                    spec.file, digest, size)
    elif digest != spec.sha256:
        if overridden(spec, "sha256"):
            expected = (f"{spec.sha256}, the value of the config override data: files: "
                        f"{spec.file}: sha256 (a typo in the override, or a damaged file?)")
        else:
            expected = (f"the pinned {spec.sha256} of {spec.file} (corrupt or not the pinned "
                        "release)")
        raise VerificationError(f"{shown}: sha256 {digest} does not match {expected}; {advice}; "
                                f"{_override_hint(spec, digest)}")
    if spec.bytes is None and digest == pinned_sha256(spec.file):
        log.warning("%s: size is not pinned; the pinned release has %d bytes - pin it in "
                    "datasets.tsv", spec.file, size)
    return digest


def stamp_record(path: str | Path, spec: ArchiveSpec, digest: str) -> dict[str, Any]:
    """What the stamp records: the archive, its sha256 and size, and whether it is the release
    pinned in the committed table (an overridden sha256 is not)."""
    pinned = pinned_sha256(spec.file)
    return {
        "file": spec.file,
        "dataset": spec.dataset,
        "sha256": digest,
        "bytes": Path(path).stat().st_size,
        "pinned": pinned is not None and digest == pinned,
        "pinned_sha256": pinned,
        "verified_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def verify_archive(path: str | Path, spec: ArchiveSpec, stamp: str | Path) -> dict[str, Any]:
    """Check `path` and write the stamp (JSON, `stamp_record`) atomically."""
    stamp = Path(stamp)
    if stamp.exists():
        stamp.unlink()
    record = stamp_record(path, spec, check_archive(path, spec))
    write_json(stamp, record)
    if not record["pinned"]:
        log.warning("%s: sha256 %s is not the pinned release (%s); results made from it are "
                    "marked not comparable", spec.file, record["sha256"],
                    record["pinned_sha256"] or "none pinned")
    log.info("%s verified: sha256 %s, %d bytes", spec.file, record["sha256"], record["bytes"])
    return record
