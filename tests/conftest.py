"""Shared fixtures: repository paths and the real Snakemake smoke run."""

from __future__ import annotations

import os

# One BLAS thread: shards are bitwise identical either way, and oversubscribed BLAS threads
# slow scipy's solvers badly on a loaded machine.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
_SMOKE = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
SMOKE_RESULTS, SMOKE_PAPER = _SMOKE["results"], _SMOKE["paper"]  # relative to the workdir
SMOKE_TERMINAL = "terminal.txt"  # what the smoke run printed (the `dpbandits` logger plugin)


def snakemake_cmd(*args: str) -> list[str]:
    return [str(BIN / "snakemake"), "-s", str(REPO / "Snakefile"), *args]


def run_snakemake(workdir: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run real snakemake with its working directory at `workdir`."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(
        snakemake_cmd("--directory", str(workdir), *args),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=REPO,
    )


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real `snakemake --cores 2 --configfile config/smoke.yaml` run shared by tests."""
    workdir = tmp_path_factory.mktemp("smoke")
    shutil.copy(REPO / "config" / "smoke.yaml", workdir / "smoke.yaml")
    proc = run_snakemake(workdir, "--cores", "2", "--logger", "dpbandits", "--configfile",
                         str(workdir / "smoke.yaml"))
    if proc.returncode != 0:
        pytest.fail(f"smoke run failed:\n{proc.stderr[-4000:]}")
    (workdir / SMOKE_TERMINAL).write_text(proc.stderr)
    return workdir
