"""Arrays that many jobs of one run draw alike (a trial's environment), kept for the run's other
jobs in `$DPBANDITS_RUN_CACHE`: a folder inside the run's fork server's temporary folder, removed
with it when the run ends (dpbandits.forkserver, workflow/rules/hooks.smk). Without the variable
nothing is kept. A file is named by the SHA-256 of its kind and key and written atomically; one
that cannot be read is drawn again, so the cache changes no number, only how often it is drawn.
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


def cached_arrays(kind: str, key: dict[str, Any],
                  draw: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """`draw()`'s named arrays, from the run's cache when an earlier job of the run stored them
    under (`kind`, `key`); else drawn, and stored for the next job."""
    folder = os.environ.get(ENV)
    if not folder:
        return draw()
    digest = hashlib.sha256(json.dumps([kind, key], sort_keys=True).encode()).hexdigest()
    path = Path(folder) / kind / f"{digest}.npz"
    try:
        with np.load(path, allow_pickle=False) as stored:
            return {name: stored[name] for name in stored.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        pass
    arrays = draw()
    try:
        with atomic_output(path) as tmp, open(tmp, "wb") as handle:
            np.savez(handle, **arrays)
    except OSError:
        pass  # a cache that cannot be written only costs drawing again
    return arrays
