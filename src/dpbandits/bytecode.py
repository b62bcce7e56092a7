"""Bytecode of the package and the workflow's scripts, written once before a run's jobs start.

Every simulation job is a fresh interpreter. Where PYTHONDONTWRITEBYTECODE is set (common in
containers) Python caches none of the modules it compiles, so each job would compile the
project's modules from source again, about 0.05 CPU-s a job; Python still reads bytecode that
exists and is current, so writing it once at the start of a run saves that in every job.
"""

from __future__ import annotations

import compileall
from pathlib import Path

import dpbandits


def precompile(*folders: Path) -> bool:
    """Write current bytecode for every module under the package and `folders`; False where a
    folder could not be written (a read-only install: jobs then compile as before)."""
    ok = True
    for folder in (Path(dpbandits.__file__).parent, *folders):
        ok = bool(compileall.compile_dir(folder, quiet=2)) and ok
    return ok
