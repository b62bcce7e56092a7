"""Results that depend only on public constants, memoised in-process and in one JSON file per
kind under `$DPBANDITS_CACHE` (default `~/.cache/dpbandits`), so that the jobs of a run share
them. Each machine fingerprint (`numerics.tag`) has its own folder there: a value's last bits
may depend on the BLAS kernels, and a cache shared by unlike machines (a cluster's home folder)
would otherwise make a shard's numbers depend on which machine computed it first. A process
writes what it computed once, when it exits (or on `flush`), merged with what other processes
wrote: one read and one write per job, not per value. Files are replaced atomically; a lost or
unreadable file, or values a killed process never wrote, only cost recomputation."""

from __future__ import annotations

import atexit
import json
import logging
import os
import weakref
from pathlib import Path
from typing import Any

from dpbandits import numerics
from dpbandits.atomic import write_text_atomic

log = logging.getLogger(__name__)


def cache_dir() -> Path:
    """$DPBANDITS_CACHE, else ~/.cache/dpbandits."""
    env = os.environ.get("DPBANDITS_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "dpbandits"


def _read(path: Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError, TypeError):
        return {}


class DiskMemo:
    """A key → JSON value memo backed by `cache_dir()/numerics-<tag>/filename` (re-read after
    `clear`)."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self._memo: dict[str, Any] = {}
        self._loaded: set[Path] = set()
        self._unwritten: dict[Path, dict[str, Any]] = {}
        _memos.add(self)

    def path(self) -> Path:
        return cache_dir() / f"numerics-{numerics.tag()}" / self.filename

    def get(self, key: str) -> Any | None:
        """The stored value, or None."""
        path = self.path()
        if path not in self._loaded:
            self._loaded.add(path)
            for k, value in _read(path).items():
                self._memo.setdefault(str(k), value)
        return self._memo.get(key)

    def put(self, key: str, value: Any) -> None:
        """Remember `value` here, and in the file at the next `flush` (at the latest when the
        process exits)."""
        self._memo[key] = value
        self._unwritten.setdefault(self.path(), {})[key] = value

    def flush(self) -> None:
        """Write the values put since the last flush, merged with what other processes wrote."""
        unwritten, self._unwritten = self._unwritten, {}
        for path, values in unwritten.items():
            try:
                data = _read(path)
                data.update(values)
                write_text_atomic(path, json.dumps(data, sort_keys=True))
            except OSError as err:  # a read-only cache only costs recomputation
                log.debug("%s not written (%s)", path, err)

    def clear(self) -> None:
        """Forget in-process values (the file is re-read on next use)."""
        self.flush()
        self._memo.clear()
        self._loaded.clear()


_memos: weakref.WeakSet[DiskMemo] = weakref.WeakSet()


@atexit.register
def flush_all() -> None:
    """`flush` every memo of this process."""
    for memo in list(_memos):
        memo.flush()
