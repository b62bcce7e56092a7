"""README's recovery promise, as a user meets it: a run of README's command stopped with Ctrl-C
(SIGINT) or `kill -9` mid-sweep, then the same command again, in a copy of the repository. The
rerun finishes without --unlock or other flags, keeps the finished shards, and no run leaves its
fork server's folder in the temporary folder."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from dpbandits import run_lock
from dpbandits.config import all_shards, load_config

from checkout import copy_checkout
from conftest import BIN, REPO

pytestmark = pytest.mark.slow

COMMAND = ".venv/bin/snakemake --cores 2 results/smoke/glm_table2/summary.csv --configfile " \
          "config/smoke.yaml"
"""README's command for one experiment at smoke scale (the test checks README shows it)."""
SHARDS = "results/smoke/glm_table2/shards"
SERVER_LOG = "results/smoke/logs/forkserver.log"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A copy of the repository with the test's virtual environment as its `.venv`."""
    root = copy_checkout(tmp_path / "repo")
    (root / ".venv").symlink_to(BIN.parent)
    return root


def start(checkout: Path) -> subprocess.Popen:
    log = open(checkout / "first.log", "w")  # noqa: SIM115 (the run's own log, closed with it)
    return subprocess.Popen(["bash", "-c", f"exec {COMMAND}"], cwd=checkout, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)


def server_folder(checkout: Path) -> Path | None:
    """The folder of the run's fork server (its socket's folder), once it serves."""
    log = checkout / SERVER_LOG
    found = re.findall(r" on (\S+)/socket$", log.read_text(), re.M) if log.is_file() else []
    return Path(found[-1]) if found else None


def written(checkout: Path) -> list[Path]:
    return sorted((checkout / SHARDS).rglob("*.h5"))


def interrupt_mid_sweep(checkout: Path, sig: signal.Signals) -> tuple[Path, list[Path]]:
    """Start README's command and send `sig` to its process group with a few shards written
    and the fork server serving; the server's folder and the shards on disk then."""
    proc = start(checkout)
    deadline = time.monotonic() + 900
    while not (server_folder(checkout) and 2 <= len(written(checkout)) < 15):
        if proc.poll() is not None or time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"never caught mid-sweep:\n{(checkout / 'first.log').read_text()[-3000:]}")
        time.sleep(0.05)
    folder = server_folder(checkout)
    os.killpg(proc.pid, sig)
    proc.wait(timeout=300)
    return folder, written(checkout)


def gone_within(path: Path, seconds: float) -> bool:
    """Whether `path` disappears within `seconds` (the server polls for its parent each second)."""
    deadline = time.monotonic() + seconds
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return not path.exists()


def rerun(checkout: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", COMMAND], cwd=checkout, capture_output=True, text=True,
                          timeout=900)


def test_readme_shows_the_command():
    assert COMMAND in (REPO / "README.md").read_text()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_the_same_command_resumes_after_an_interruption(checkout: Path, sig: signal.Signals):
    folder, before = interrupt_mid_sweep(checkout, sig)
    assert gone_within(folder, 10), f"{folder} left behind after {sig.name}"
    kept = {p: p.stat().st_mtime_ns for p in before}
    again = rerun(checkout)
    assert again.returncode == 0, again.stderr[-4000:]
    log = again.stdout + again.stderr
    assert "IncompleteFilesException" not in log and "LockException" not in log
    assert (checkout / "results/smoke/glm_table2/summary.csv").is_file()
    assert len(written(checkout)) == len(all_shards(load_config(checkout / "config/smoke.yaml"))[
        "glm_table2"])
    redone = [p for p, mtime in kept.items() if p.stat().st_mtime_ns != mtime]
    assert len(redone) <= 2, redone  # only the shards whose jobs were open (--cores 2)
    if sig == signal.SIGKILL:
        assert "removed the lock left in .snakemake/locks by a run that is gone" in log
    assert not run_lock.lock_files(checkout / run_lock.LOCKS)
    assert not server_folder(checkout).exists()  # the rerun's own server cleaned up too
