"""Sweeps that cannot silently mix results: duplicate entries, stale and corrupt shards, and
separate smoke folders, each through real Snakemake."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import h5py
import pandas as pd
import pytest
import yaml

from conftest import REPO, SMOKE_PAPER, SMOKE_RESULTS, run_snakemake

pytestmark = pytest.mark.slow

SHARDS = Path("results", "tiny", "shards", "GLOC", "eps~none", "inst~0")
EXPERIMENT = {
    "group": "synthetic", "paper": "glm",
    "instance": {"generator": "glm_ball", "family": "probit", "d": 2, "K": 4, "S": 1.0,
                 "horizon": 40, "seed": 3},
    "algorithms": [{"label": "GLOC", "policy": "GLOC"}],
    "trials": 2, "trials_per_shard": 1,
    "outputs": [{"kind": "regret_curves"}],
}


def _config(workdir: Path, **changes: object) -> Path:
    config = {"experiments": {"tiny": {**EXPERIMENT, **changes}}}
    path = workdir / "tiny.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _run(workdir: Path, config: Path) -> tuple[int, str]:
    proc = run_snakemake(workdir, "--cores", "1", "results/tiny/summary.csv", "--configfile",
                         str(config))
    return proc.returncode, proc.stderr


def test_two_entries_with_one_shard_folder_are_rejected(tmp_path: Path) -> None:
    config = _config(tmp_path, algorithms=[
        {"label": "GLOC", "policy": "GLOC", "params": {"lam0": 1.0}},
        {"label": "GLOC", "policy": "GLOC", "params": {"lam0": 2.0}}])
    code, err = _run(tmp_path, config)
    lines = [line for line in err.splitlines() if "dpbandits: error" in line]
    assert code != 0 and len(lines) == 1, err[-2000:]
    assert "entries 0 ('GLOC') and 1 ('GLOC') make the same shard folder 'GLOC'" in lines[0]
    assert not (tmp_path / "results").exists()


def test_a_stale_shard_is_set_aside_and_rerun(tmp_path: Path) -> None:
    config = _config(tmp_path)
    assert _run(tmp_path, config)[0] == 0
    shard = tmp_path / SHARDS / "seeds~1-1.h5"
    with h5py.File(shard, "r+") as handle:  # as if made by a config with another horizon
        spec = json.loads(handle.attrs["spec"])
        spec["instance"]["horizon"] = 60
        handle.attrs["spec"] = json.dumps(spec)
    shutil.rmtree(tmp_path / ".snakemake" / "metadata")
    (tmp_path / "results" / "tiny" / "summary.csv").unlink()
    code, err = _run(tmp_path, config)
    lines = [line for line in err.splitlines() if "dpbandits: error" in line]
    assert code != 0 and len(lines) == 1, err[-2000:]
    assert "seeds~1-1.h5: made for another config: instance.horizon 60 ≠ 40" in lines[0]
    assert "(moved to results/quarantine/tiny/shards/GLOC" in lines[0]
    assert "rerun the same command" in lines[0]
    assert not shard.exists() and list((tmp_path / "results" / "quarantine").rglob("*.h5.*"))
    code, err = _run(tmp_path, config)
    assert code == 0, err[-2000:]
    summary = pd.read_csv(tmp_path / "results" / "tiny" / "summary.csv")
    assert sorted(summary["seed"]) == [0, 1] and (summary["T"] == 40).all()


def test_a_corrupt_shard_is_set_aside_and_rerun(tmp_path: Path) -> None:
    config = _config(tmp_path)
    assert _run(tmp_path, config)[0] == 0
    shard = tmp_path / SHARDS / "seeds~0-0.h5"
    shard.write_bytes(shard.read_bytes()[:200])
    (tmp_path / "results" / "tiny" / "summary.csv").unlink()
    code, err = _run(tmp_path, config)
    assert code != 0 and "seeds~0-0.h5: unreadable" in err, err[-2000:]
    code, err = _run(tmp_path, config)
    assert code == 0, err[-2000:]
    assert len(pd.read_csv(tmp_path / "results" / "tiny" / "summary.csv")) == 2


def test_smoke_runs_in_its_own_folders(smoke_run: Path) -> None:
    assert SMOKE_RESULTS != "results" and SMOKE_PAPER != "paper"
    assert (smoke_run / SMOKE_RESULTS / "glm_table2" / "summary.csv").is_file()
    assert (smoke_run / SMOKE_PAPER / "reproduction.md").is_file()
    assert not (smoke_run / "results" / "glm_table2").exists()
    assert not (smoke_run / "paper" / "reproduction.md").exists()
    assert REPO.is_dir()
