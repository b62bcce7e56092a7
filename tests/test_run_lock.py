"""Stale-lock detection: only the locks of runs that are gone are removed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from dpbandits import run_lock


def locked(tmp_path: Path, *owners: str) -> Path:
    """A lock folder as Snakemake leaves it, with the given owner records."""
    locks = tmp_path / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    (locks / "0.input.lock").write_text("a\n")
    (locks / "0.output.lock").write_text("b\n")
    for owner in owners:
        (locks / f"owner.{owner}").touch()
    return locks


def dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(proc.stdout)


def test_the_lock_of_a_run_that_is_gone_is_removed(tmp_path: Path):
    pid = dead_pid()
    locks = locked(tmp_path, f"{socket.gethostname()}.{pid}")
    notice = run_lock.clear_stale(locks)
    assert notice and f"process {pid}" in notice and "\n" not in notice
    assert run_lock.lock_files(locks) == [] and list(locks.iterdir()) == []


def test_the_lock_of_a_live_run_is_kept_and_named(tmp_path: Path):
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        locks = locked(tmp_path, f"{socket.gethostname()}.{live.pid}",
                       f"{socket.gethostname()}.{dead_pid()}")
        notice = run_lock.clear_stale(locks)
        assert notice and "--unlock" in notice and str(live.pid) in notice
        assert len(run_lock.lock_files(locks)) == 2
    finally:
        live.kill()
        live.wait()


def test_a_lock_of_another_machine_or_without_owner_is_kept(tmp_path: Path):
    for owners in (("elsewhere.1",), ()):
        locks = locked(tmp_path / str(len(owners)), *owners)
        notice = run_lock.clear_stale(locks)
        assert notice and "--unlock" in notice
        assert len(run_lock.lock_files(locks)) == 2


def test_this_runs_own_record_does_not_count(tmp_path: Path):
    locks = locked(tmp_path)
    record = run_lock.record_owner(locks)
    assert record.name == f"owner.{socket.gethostname()}.{os.getpid()}"
    assert "--unlock" in run_lock.clear_stale(locks)  # not mistaken for a run that is gone
    assert len(run_lock.lock_files(locks)) == 2
