"""Stale Snakemake locks: which run holds `.snakemake/locks`, and clearing the locks of a run
that is gone.

Snakemake locks a working directory for the length of a run and removes the lock when the run
ends, also on Ctrl-C; a run killed with SIGKILL (or by a power cut) leaves it, and the next run
stops with a LockException. Each run of this workflow leaves its owner record next to the locks
(`owner.<host>.<pid>`) before Snakemake locks; a later run removes the locks when every record
names a process of this machine that no longer runs, and otherwise names the lock and the
command that clears it in one line.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

LOCKS = Path(".snakemake") / "locks"
"""Snakemake's lock folder, relative to the working directory."""
OWNER = "owner."


def _owner_name(host: str, pid: int) -> str:
    return f"{OWNER}{host}.{pid}"


def _is_running(pid: int) -> bool:
    """Whether a process `pid` runs on this machine (not a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def lock_files(locks: Path = LOCKS) -> list[Path]:
    """Snakemake's lock files (`<n>.input.lock`, `<n>.output.lock`)."""
    return sorted(p for p in locks.glob("*.lock") if p.name.split(".", 1)[0].isdigit())


def clear_stale(locks: Path = LOCKS) -> str | None:
    """Remove the locks of runs that are gone; a one-line notice of what was done, or of a lock
    this run cannot tell is stale (None when there is nothing to say)."""
    if not locks.is_dir():
        return None
    host, me = socket.gethostname(), os.getpid()
    live, dead, foreign = [], [], []
    for record in locks.glob(f"{OWNER}*"):
        owner_host, _, pid = record.name.removeprefix(OWNER).rpartition(".")
        if not pid.isdigit() or owner_host != host:
            foreign.append(record)
        elif int(pid) != me:
            (live if _is_running(int(pid)) else dead).append(record)
    held = lock_files(locks)
    for record in dead:
        record.unlink(missing_ok=True)
    if not held:
        return None
    if dead and not live and not foreign:
        for lock in held:
            lock.unlink(missing_ok=True)
        pids = ", ".join(r.name.rpartition(".")[2] for r in dead)
        return (f"dpbandits: removed the lock left in {locks} by a run that is gone "
                f"(process {pids}); its unfinished jobs run again")
    holders = ", ".join(r.name.removeprefix(OWNER) for r in (*live, *foreign)) or "unknown"
    return (f"dpbandits: {locks} holds a lock (run {holders}); if no other snakemake runs in "
            "this folder, clear it with the same command and --unlock")


def record_owner(locks: Path = LOCKS) -> Path:
    """Leave this run's owner record next to the locks Snakemake is about to take."""
    locks.mkdir(parents=True, exist_ok=True)
    record = locks / _owner_name(socket.gethostname(), os.getpid())
    record.touch()
    return record
