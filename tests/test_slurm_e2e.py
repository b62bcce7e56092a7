"""The SLURM profile on a real cluster gives bitwise the result arrays of a local `--cores` run.

Needs a running SLURM cluster whose config is /etc/slurm/slurm.conf (tools/slurm/up.sh starts
a single-node one); skipped with the reason when `sbatch` is missing or `sinfo` fails.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from shard_compare import compare_shards, summary_differences

from dpbandits.config import all_shards, load_config

from conftest import BIN, REPO, SMOKE_RESULTS

SMOKE = REPO / "config" / "smoke.yaml"
PROFILE = REPO / "workflow" / "profiles" / "slurm"


def slurm_unavailable() -> str | None:
    """Why SLURM cannot run jobs here, or None when it can."""
    if shutil.which("sbatch") is None:
        return "sbatch not found: no SLURM client here (tools/slurm/up.sh starts a local cluster)"
    try:
        proc = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True,
                              timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"sinfo failed: {exc}"
    if proc.returncode != 0:
        return f"sinfo failed: {proc.stderr.strip() or proc.returncode}"
    states = proc.stdout.split()
    if not any(s.rstrip("*~#") in ("idle", "mixed", "allocated") for s in states):
        return f"no SLURM node accepts jobs (sinfo states: {' '.join(states) or 'none'})"
    return None


REASON = slurm_unavailable()
pytestmark = [pytest.mark.slurm, pytest.mark.skipif(REASON is not None, reason=str(REASON))]


@pytest.fixture(scope="module")
def slurm_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """`snakemake --profile workflow/profiles/slurm --configfile config/smoke.yaml`, for real,
    up to the summary.csv of each experiment of SLURM_EXPERIMENTS (its shards and their
    aggregation)."""
    workdir = tmp_path_factory.mktemp("slurm")
    shutil.copy(SMOKE, workdir / "smoke.yaml")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    summaries = [f"{SMOKE_RESULTS}/{name}/summary.csv" for name in synthetic_shards()]
    proc = subprocess.run(
        [str(BIN / "snakemake"), *summaries, "-s", str(REPO / "Snakefile"), "--profile",
         str(PROFILE), "--configfile", "smoke.yaml"],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=3600,
    )
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        pytest.fail(f"SLURM smoke run failed:\n{log[-6000:]}")
    # The terminal shows the project's compact view; Snakemake's own log file keeps every
    # message, the executor's submissions included.
    for path in sorted((workdir / ".snakemake" / "log").glob("*.snakemake.log")):
        log += path.read_text()
    return workdir, log


# Every policy family and path on the cluster: the GLM baselines and Private-GLM in both
# accounting modes and code states, the batched eliminations, the TS family with the zCDP,
# DGS and JDP baselines, Shuffle-GLM; 36 shards, four SLURM bundles.
SLURM_EXPERIMENTS = ("glm_fig1_probit", "linear_fig2", "ts_synthetic", "glm_shuffle")


def synthetic_shards() -> dict[str, list[str]]:
    """Shard paths (relative to results/) of the smoke experiments run on the cluster."""
    shards = all_shards(load_config(SMOKE), group="synthetic")
    return {name: [s.path for s in shards[name]] for name in SLURM_EXPERIMENTS}


def expected_shards() -> list[str]:
    return [path for paths in synthetic_shards().values() for path in paths]


def test_shards_went_through_slurm_in_bundles_of_the_profile_size(slurm_run: tuple[Path, str]):
    _, log = slurm_run
    bundle = yaml.safe_load((PROFILE / "config.yaml").read_text())["group-components"]["sims"]
    submitted = re.findall(r"submitted with SLURM jobid \d+ \(log: [^)]*/group_sims_", log)
    assert len(submitted) == math.ceil(len(expected_shards()) / bundle)


def test_every_shard_is_bitwise_identical_to_the_local_run(
    slurm_run: tuple[Path, str], smoke_run: Path
):
    workdir, _ = slurm_run
    paths = expected_shards()
    assert paths
    report = compare_shards(workdir / SMOKE_RESULTS, smoke_run / SMOKE_RESULTS, paths)
    assert report == {}, f"{len(report)} of {len(paths)} shards differ: {report}"


def test_summary_regret_columns_match_the_local_run(
    slurm_run: tuple[Path, str], smoke_run: Path
):
    workdir, _ = slurm_run
    problems = []
    for name in synthetic_shards():
        problems += summary_differences(workdir / SMOKE_RESULTS / name / "summary.csv",
                                        smoke_run / SMOKE_RESULTS / name / "summary.csv")
    assert problems == []
