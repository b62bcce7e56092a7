"""All-or-nothing writes: a hidden temporary name beside the target, then one rename.

A temporary is named `.<name>.tmp-<host>-<pid>`. A writer killed before its rename leaves it
behind; it is never an output, and the next write of the same target on that host removes it
once its writer process is gone.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _host() -> str:
    return socket.gethostname().replace("-", "_") or "localhost"


def temporary_path(path: Path, pid: int | None = None, host: str | None = None) -> Path:
    """The hidden temporary of `path` for a writer process (default: this one, on this host)."""
    pid = os.getpid() if pid is None else pid
    return path.with_name(f".{path.name}.tmp-{host or _host()}-{pid}")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def remove_stale_temporaries(path: Path) -> list[Path]:
    """Remove the temporaries of `path` left by dead writers on this host; return them."""
    prefix = temporary_path(path, pid=0).name[:-1]
    removed = []
    for candidate in path.parent.glob(f"{prefix}*"):
        pid = candidate.name[len(prefix):]
        if pid.isdigit() and int(pid) != os.getpid() and _process_gone(int(pid)):
            _remove(candidate)
            removed.append(candidate)
    return removed


@contextmanager
def atomic_output(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it to `path` only if the block succeeds.

    The temporary may be made a file or a folder; a folder replaces any folder at `path`.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    tmp = temporary_path(path)
    try:
        yield tmp
        if tmp.is_dir() and path.is_dir():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            _remove(tmp)


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write a text file all-or-nothing."""
    with atomic_output(path) as tmp:
        tmp.write_text(text)
