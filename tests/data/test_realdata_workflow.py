"""Real Snakemake on fixture archives: the whole `realdata` target, a missing archive offline,
and a corrupted archive (tests/data/rating_fixtures.py writes the upstream layouts)."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from rating_fixtures import write_jester2_zip, write_movielens_zip

from dpbandits.config import load_config
from dpbandits.data.files import sha256_of
from dpbandits.data.registry import archives as pinned
from dpbandits.data.svd import read_factors

from conftest import REPO, SMOKE_PAPER, SMOKE_RESULTS, run_snakemake

pytestmark = pytest.mark.slow


def realdata_config(workdir: Path, **data: object) -> Path:
    """config/smoke.yaml reduced to its realdata experiments, data settings overridden."""
    cfg = load_config(REPO / "config" / "smoke.yaml")
    cfg["experiments"] = {k: v for k, v in cfg["experiments"].items()
                          if v.get("group") == "realdata"}
    cfg["data"] = {**cfg.get("data", {}), **data}
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def fixtures(folder: Path) -> dict[str, dict[str, str]]:
    zips = [write_movielens_zip(folder), write_jester2_zip(folder)]
    return {z.name: {"sha256": sha256_of(z)} for z in zips}


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_realdata_target_end_to_end(tmp_path):
    mirror = tmp_path / "mirror"
    config = realdata_config(tmp_path, mirror=str(mirror), files=fixtures(mirror))
    proc = run_snakemake(tmp_path, "realdata", "--cores", "2", "--configfile", str(config))
    assert proc.returncode == 0, proc.stderr[-4000:]
    root = tmp_path / "results" / "data"
    assert leftovers(root / "archives") == sorted(
        n for f in ("ml-25m.zip", "jester_dataset_2.zip") for n in (f, f + ".verified.json"))
    factors = read_factors(root / "ml-25m" / "svd_k50.h5")
    assert factors.user_factors.shape == (300, 50) and factors.item_factors.shape == (120, 50)
    cfg = yaml.safe_load(config.read_text())
    for name, exp in cfg["experiments"].items():
        summary = pd.read_csv(tmp_path / SMOKE_RESULTS / name / "summary.csv")
        assert set(summary["algorithm"]) == {a["label"] for a in exp["algorithms"]}
        assert summary["accept_rate"].between(0.05, 1.0).all()
        assert (summary["T"] == exp["instance"]["horizon"]).all()
        for stem in (f"tables/{name}_ctr.md", f"tables/{name}_claims.md",
                     f"figures/{name}_ctr.png"):
            assert (tmp_path / SMOKE_PAPER / stem).stat().st_size > 0
    again = run_snakemake(tmp_path, "realdata", "-n", "--configfile", str(config))
    assert "Nothing to be done" in again.stdout + again.stderr


def test_missing_archive_offline_fails_fast_with_the_placement_message(tmp_path):
    files = {f: {"urls": [f"https://127.0.0.1:9/{f}"]} for f in ("ml-25m.zip",
                                                               "jester_dataset_2.zip")}
    config = realdata_config(tmp_path, files=files, timeout=5)
    start = time.perf_counter()
    proc = run_snakemake(tmp_path, "realdata", "--cores", "1", "--configfile", str(config))
    assert proc.returncode != 0
    assert time.perf_counter() - start < 120
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("dpbandits: error:")]
    assert lines, proc.stderr[-3000:]
    message = lines[0]
    name = "ml-25m.zip" if "ml-25m.zip" in message else "jester_dataset_2.zip"
    assert f"Place {name} at results/data/archives/{name}" in message
    assert f"https://127.0.0.1:9/{name}" in message
    assert f"sha256 {pinned()[name].sha256}" in message
    assert leftovers(tmp_path / "results" / "data" / "archives") == []


def test_corrupted_archive_fails_verification_and_leaves_no_stamp(tmp_path):
    mirror = tmp_path / "mirror"
    files = fixtures(mirror)
    archives = tmp_path / "results" / "data" / "archives"
    archives.mkdir(parents=True)
    data = bytearray((mirror / "ml-25m.zip").read_bytes())
    data[len(data) // 2] ^= 0x01
    (archives / "ml-25m.zip").write_bytes(bytes(data))  # pre-placed by hand, one byte off
    config = realdata_config(tmp_path, files=files)
    proc = run_snakemake(tmp_path, "results/data/ml-25m/svd_k50.h5", "--cores", "1",
                         "--configfile", str(config))
    assert proc.returncode != 0
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("dpbandits: error:")]
    assert lines and "does not match the pinned" in lines[0] and "ml-25m.zip" in lines[0]
    assert not (archives / "ml-25m.zip.verified.json").exists()
    assert not (tmp_path / "results" / "data" / "raw" / "ml-25m").exists()
