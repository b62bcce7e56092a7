"""File helpers: streaming sha256 and all-or-nothing JSON writes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from dpbandits.atomic import write_text_atomic

CHUNK = 1 << 20


def sha256_of(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def write_json(path: str | Path, payload: dict[str, Any]) -> None:
    """Write a JSON file atomically."""
    write_text_atomic(path, json.dumps(payload, indent=2, sort_keys=True) + "\n")
