"""Archive verification against the pinned size and sha256; a stamp file records success."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from dpbandits.data import DataError
from dpbandits.data.files import sha256_of, write_json
from dpbandits.data.registry import ArchiveSpec

log = logging.getLogger(__name__)


class VerificationError(DataError):
    """An archive's size or sha256 differs from the pinned value."""


def check_archive(path: str | Path, spec: ArchiveSpec) -> str:
    """Size, then sha256 of `path` against `spec`; returns the sha256 or raises one clear line.

    An unpinned sha256 (None) is computed and logged so that it can be pinned in the table.
    """
    path = Path(path)
    size = path.stat().st_size
    if spec.bytes is not None and size != spec.bytes:
        raise VerificationError(
            f"{path}: {size} bytes, but {spec.file} must have {spec.bytes} bytes (truncated or "
            "not the pinned release); delete it and re-run"
        )
    digest = sha256_of(path)
    if spec.sha256 is None:
        log.warning("%s: sha256 is not pinned; computed %s (%d bytes) - pin it in datasets.tsv",
                    spec.file, digest, size)
    elif digest != spec.sha256:
        raise VerificationError(
            f"{path}: sha256 {digest} does not match the pinned {spec.sha256} of {spec.file} "
            "(corrupt or not the pinned release); delete it and re-run"
        )
    return digest


def verify_archive(path: str | Path, spec: ArchiveSpec, stamp: str | Path) -> dict[str, Any]:
    """Check `path` and write the stamp (JSON: file, sha256, bytes, pinned, time) atomically."""
    stamp = Path(stamp)
    if stamp.exists():
        stamp.unlink()
    digest = check_archive(path, spec)
    record = {
        "file": spec.file,
        "dataset": spec.dataset,
        "sha256": digest,
        "bytes": Path(path).stat().st_size,
        "pinned": spec.sha256 is not None,
        "verified_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    write_json(stamp, record)
    log.info("%s verified: sha256 %s, %d bytes", spec.file, digest, record["bytes"])
    return record
