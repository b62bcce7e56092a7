"""Compiled kernels: `@jit` compiles a function of plain Python and numpy with numba.

Every algorithm is written once, in its module, as functions on arrays; `@jit` compiles them
(numba's nopython mode) the first time they are called, and the policies' methods and their
compiled round loops call the same functions (docs/architecture.md, "Compiled kernels").

Compiled code is kept on disk so that later processes load it instead of compiling again.
numba keys a cached function by its own source file alone, so a kernel calling a function of
another module would keep its old code after that module changed. Here every kernel's cache
folder is named by a digest of the numba, llvmlite, numpy and Python versions, of every source
file of the dpbandits package, and of the source file of every other module whose kernels were
declared in this process up to and including the kernel's own: an edit anywhere in the package
(or in a module of one's own kernels imported before the one that calls it) compiles the
kernels again, once.

Environment:
- `DPBANDITS_JIT=0` runs every kernel as plain Python (much slower; for a debugger or print);
- `DPBANDITS_JIT_CACHE=0` compiles in memory only, never reading or writing the disk cache;
- `DPBANDITS_CACHE` moves the cache (default `~/.cache/dpbandits`; kernels under `jit/`).
"""

from __future__ import annotations

import hashlib
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

PACKAGE = Path(__file__).resolve().parent
OFF = ("0", "off", "false", "no")
STALE_DAYS = 30  # cache folders unused this long are removed when a run starts (`prune`)


def enabled() -> bool:
    """Whether kernels are compiled (`DPBANDITS_JIT` is not 0/off/false/no)."""
    return os.environ.get("DPBANDITS_JIT", "1").strip().lower() not in OFF


def caching() -> bool:
    """Whether compiled kernels are kept on disk (`DPBANDITS_JIT_CACHE` is not 0/off/…)."""
    return os.environ.get("DPBANDITS_JIT_CACHE", "1").strip().lower() not in OFF


def _file_digest(path: Path) -> bytes:
    return hashlib.sha256(path.read_bytes()).digest()


def _package_digest() -> bytes:
    """Digest of every Python source of the package, with its path inside the package."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0")
        digest.update(_file_digest(path))
    return digest.digest()


def _versions() -> str:
    import llvmlite
    import numba
    import numpy

    return (f"numba {numba.__version__} llvmlite {llvmlite.__version__} numpy "
            f"{numpy.__version__} python {platform.python_version()} {sys.platform}")


_package: bytes | None = None
_outside: dict[str, bytes] = {}  # source file → digest, for kernels outside the package
_kernels: list[Any] = []


def cache_root() -> Path:
    """The folder holding one folder of compiled kernels per source digest."""
    from dpbandits.disk_memo import cache_dir

    return cache_dir() / "jit"


def cache_folder() -> Path:
    """The folder of the kernels declared now: named by the versions, the package's sources
    and the sources of the modules outside it that declared kernels so far."""
    global _package
    if _package is None:
        _package = _package_digest()
    digest = hashlib.sha256(_versions().encode() + _package)
    for path in sorted(_outside):
        digest.update(path.encode() + b"\0" + _outside[path])
    return cache_root() / digest.hexdigest()[:20]


def _source_file(func: Callable[..., Any]) -> Path | None:
    code = getattr(func, "__code__", None)
    path = Path(code.co_filename) if code is not None else None
    return path.resolve() if path is not None and path.is_file() else None


def jit(func: F) -> F:
    """`func` compiled by numba in nopython mode on first call, its code cached on disk under
    `cache_folder()` (plain `func` when `DPBANDITS_JIT=0`)."""
    if not enabled():
        return func
    import numba

    path = _source_file(func)
    if path is not None and PACKAGE not in path.parents:
        _outside[str(path)] = _file_digest(path)
    cache = caching() and path is not None
    if not cache:
        kernel = numba.njit(func)
    else:
        folder = cache_folder()
        previous = numba.config.CACHE_DIR
        numba.config.CACHE_DIR = str(folder)  # read when the dispatcher sets up its cache
        try:
            kernel = numba.njit(cache=True)(func)
        finally:
            numba.config.CACHE_DIR = previous
        _touch(folder)
    _kernels.append(kernel)
    return kernel  # type: ignore[return-value]


def _touch(folder: Path) -> None:
    """Mark the folder as used (its modification time), so `prune` keeps it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.utime(folder)
    except OSError:  # a read-only cache only costs compiling again
        pass


def kernels() -> list[Any]:
    """Every kernel declared in this process, in declaration order."""
    return list(_kernels)


def python_function(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """The Python function a kernel compiles (the kernel itself when compiling is off)."""
    return getattr(kernel, "py_func", kernel)


def prune(days: float = STALE_DAYS) -> list[Path]:
    """Remove the cache folders not used for `days` days (the current one is always kept)."""
    import shutil

    root, keep = cache_root(), cache_folder()
    cutoff = time.time() - days * 86400.0
    removed = []
    for folder in root.glob("*") if root.is_dir() else []:
        try:
            if folder != keep and folder.is_dir() and folder.stat().st_mtime < cutoff:
                shutil.rmtree(folder)
                removed.append(folder)
        except OSError:
            continue
    return removed
