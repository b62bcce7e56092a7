"""Arrays that many jobs of one run draw alike (a trial's environment), kept for the run's other
jobs in `$DPBANDITS_RUN_CACHE`: a folder inside the run's fork server's temporary folder, removed
when the run ends (dpbandits.forkserver, workflow/rules/hooks.smk). Without the variable, or once
the server's folder is gone, nothing is kept. A file is named by the SHA-256 of its kind and key
and written atomically; one that cannot be read, or whose arrays are not the names, shapes and
types expected, is drawn again: the cache changes no number, only how often it is drawn.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from dpbandits.atomic import atomic_output

ENV = "DPBANDITS_RUN_CACHE"
"""Environment variable naming the run's cache folder."""

Layout = dict[str, tuple[tuple[int, ...], type]]
"""Name → (shape, dtype) of the arrays a draw gives."""


def cached_arrays(kind: str, key: dict[str, Any], layout: Layout,
                  draw: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """`draw()`'s arrays (`layout`), from the run's cache when an earlier job of the run stored
    them under (`kind`, `key`); else drawn, and stored for the next job."""
    folder = os.environ.get(ENV)
    if not folder or not Path(folder).parent.is_dir():
        return draw()
    name = json.dumps([kind, key], sort_keys=True, default=_plain)
    path = Path(folder) / kind / f"{hashlib.sha256(name.encode()).hexdigest()}.npz"
    stored = _read(path, layout)
    if stored is not None:
        return stored
    arrays = draw()
    try:
        with atomic_output(path) as tmp, open(tmp, "wb") as handle:
            np.savez(handle, **arrays)
    except OSError:
        pass  # a cache that cannot be written only costs drawing again
    return arrays


def _read(path: Path, layout: Layout) -> dict[str, np.ndarray] | None:
    """The arrays stored at `path` if they are those of `layout`, else None."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            if not isinstance(stored, np.lib.npyio.NpzFile) or set(stored.files) != set(layout):
                return None
            arrays = {name: stored[name] for name in layout}
    except (OSError, ValueError, TypeError, EOFError, zipfile.BadZipFile):
        return None  # TypeError: a .npy file, not an archive of arrays
    for name, (shape, dtype) in layout.items():
        if arrays[name].shape != shape or arrays[name].dtype != dtype:
            return None
    return arrays


def _plain(value: Any) -> Any:
    """A numpy scalar of a key as the Python number it holds."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"a run-cache key holds {type(value).__name__}, not JSON data")
