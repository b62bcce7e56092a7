"""SIGKILL of the Snakemake controller mid-sweep: the rerun keeps finished shards untouched,
redoes the shard that was being written, and ends bitwise equal to an uninterrupted run."""

from __future__ import annotations

import base64
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from shard_compare import compare_shards, summary_differences

from dpbandits.config import all_shards, load_config
from dpbandits.storage import read_shard

from conftest import BIN, REPO, SMOKE_RESULTS

pytestmark = pytest.mark.slow

SMOKE = REPO / "config" / "smoke.yaml"
EXPERIMENT = "glm_table2"
KILL_AFTER = 2  # finished shards before the controller is killed


def snakemake(workdir: Path, *args: str) -> list[str]:
    return [str(BIN / "snakemake"), f"{SMOKE_RESULTS}/{EXPERIMENT}/summary.csv", "-s",
            str(REPO / "Snakefile"), "--cores", "1", "--configfile", str(workdir / "smoke.yaml"),
            *args]


def incomplete_outputs(workdir: Path) -> set[str]:
    """Outputs Snakemake had marked as being produced (its .snakemake/incomplete records)."""
    folder = workdir / ".snakemake" / "incomplete"
    names = set()
    for record in folder.rglob("*") if folder.is_dir() else []:
        if record.is_file() and record.name != "migration_underway":
            encoded = "".join(part.lstrip("@") for part in record.relative_to(folder).parts)
            names.add(base64.urlsafe_b64decode(encoded).decode())
    return names


def caught_mid_job(workdir: Path, shards: list[str]) -> bool:
    """KILL_AFTER shards finished and one more written whose job Snakemake has not closed."""
    written = {s for s in shards if (workdir / s).is_file()}
    return len(written) > KILL_AFTER and bool(incomplete_outputs(workdir) & written)


def caught_frozen(proc: subprocess.Popen, workdir: Path, shards: list[str]) -> bool:
    """Whether the run is caught mid-job, checked again with the controller's process group
    stopped (left stopped if so): Snakemake cannot close the job between the check and the kill."""
    if not caught_mid_job(workdir, shards):
        return False
    os.killpg(proc.pid, signal.SIGSTOP)
    if caught_mid_job(workdir, shards):
        return True
    os.killpg(proc.pid, signal.SIGCONT)
    return False


def temporaries(workdir: Path) -> list[str]:
    """Hidden temporary files of writers under the results folder."""
    return sorted(p.name for p in (workdir / SMOKE_RESULTS).rglob(".*.tmp*"))


def simulate_jobs_run(log: str) -> int:
    """Shards the run set out to compute (the plan line of the `dpbandits` logger)."""
    match = re.search(r"^dpbandits: (\d+) of \d+ shards to run", log, flags=re.MULTILINE)
    return int(match.group(1)) if match else 0


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Start a local run, SIGKILL it with a shard written but its job open, record, rerun."""
    workdir = tmp_path_factory.mktemp("interrupted")
    shutil.copy(SMOKE, workdir / "smoke.yaml")
    shards = [f"{SMOKE_RESULTS}/{s.path}" for s in all_shards(load_config(SMOKE))[EXPERIMENT]]
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    with open(workdir / "first.log", "w") as log:
        proc = subprocess.Popen(snakemake(workdir), cwd=workdir, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 600
    while not caught_frozen(proc, workdir, shards):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the run was never caught with a shard written but its job unfinished:"
                        f"\n{(workdir / 'first.log').read_text()[-3000:]}")
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)  # the controller and the job it was running
    proc.wait()

    on_disk = {s: os.stat(workdir / s) for s in shards if (workdir / s).is_file()}
    in_flight = incomplete_outputs(workdir) & set(shards)
    leftovers = temporaries(workdir)

    unlock = subprocess.run(snakemake(workdir, "--unlock"), cwd=workdir, env=env,
                            capture_output=True, text=True, timeout=300)
    assert unlock.returncode == 0, unlock.stderr[-2000:]
    rerun = subprocess.run(snakemake(workdir), cwd=workdir, env=env, capture_output=True,
                           text=True, timeout=900)
    assert rerun.returncode == 0, rerun.stderr[-4000:]
    return {"workdir": workdir, "shards": shards, "on_disk": on_disk, "in_flight": in_flight,
            "leftovers": leftovers, "rerun_log": rerun.stdout + rerun.stderr,
            "leftovers_after_rerun": temporaries(workdir)}


def test_killed_run_left_finished_shards_and_one_unclosed(interrupted: dict):
    shards, on_disk, in_flight = (interrupted[k] for k in ("shards", "on_disk", "in_flight"))
    assert KILL_AFTER < len(on_disk) < len(shards)
    assert len(in_flight) == 1 and in_flight <= set(on_disk)  # --cores 1: one job was open
    for shard in set(on_disk) - in_flight:
        read_shard(interrupted["workdir"] / shard)  # the closed ones are complete files


def test_rerun_does_not_redo_finished_shards(interrupted: dict):
    workdir, on_disk, in_flight = (interrupted[k] for k in ("workdir", "on_disk", "in_flight"))
    kept = set(on_disk) - in_flight
    for shard in kept:
        after = os.stat(workdir / shard)
        assert (after.st_ino, after.st_mtime_ns) == (on_disk[shard].st_ino,
                                                     on_disk[shard].st_mtime_ns), shard
    assert simulate_jobs_run(interrupted["rerun_log"]) == len(interrupted["shards"]) - len(kept)


def test_shard_of_the_unclosed_job_is_redone_not_accepted(interrupted: dict):
    workdir, on_disk = interrupted["workdir"], interrupted["on_disk"]
    (shard,) = interrupted["in_flight"]
    after, before = os.stat(workdir / shard), on_disk[shard]
    # rewritten: a new file (a freed inode number may be reused, so the mtime decides too)
    assert (after.st_ino, after.st_mtime_ns) != (before.st_ino, before.st_mtime_ns)
    for name in interrupted["leftovers"]:  # a killed writer's temporary file is never an output
        assert not any(s.endswith(name) for s in interrupted["shards"])
    assert interrupted["leftovers_after_rerun"] == []  # and the redone write removed it


def test_resumed_sweep_equals_an_uninterrupted_run(interrupted: dict, smoke_run: Path):
    workdir = interrupted["workdir"]
    rel = [s.removeprefix(f"{SMOKE_RESULTS}/") for s in interrupted["shards"]]
    assert compare_shards(workdir / SMOKE_RESULTS, smoke_run / SMOKE_RESULTS, rel) == {}
    assert summary_differences(workdir / SMOKE_RESULTS / EXPERIMENT / "summary.csv",
                               smoke_run / SMOKE_RESULTS / EXPERIMENT / "summary.csv") == []
