"""Real Snakemake on fixture archives: the whole `realdata` target (both feature modes, the
provenance down to summary.csv and the report), the small MovieLens experiment alone, a missing
archive offline, and a corrupted archive (tests/data/rating_fixtures.py writes the upstream
layouts)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from rating_fixtures import ml_latest_small_frame, write_jester2_zip, write_movielens_zip

from dpbandits.config import load_config
from dpbandits.data.files import sha256_of
from dpbandits.data.registry import archives as pinned
from dpbandits.data.registry import datasets
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


def small_zip(folder: Path) -> Path:
    """An ml-latest-small-shaped archive, small enough for a test (its own checksum)."""
    frame = ml_latest_small_frame(n_users=120, n_items=400, n_ratings=6000, seed=3)
    return write_movielens_zip(folder, "ml-latest-small", frame=frame)


def fixtures(folder: Path) -> dict[str, dict[str, str]]:
    zips = [write_movielens_zip(folder), write_jester2_zip(folder), small_zip(folder)]
    return {z.name: {"sha256": sha256_of(z)} for z in zips}


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_realdata_target_end_to_end(tmp_path):
    mirror = tmp_path / "mirror"
    config = realdata_config(tmp_path, mirror=str(mirror), files=fixtures(mirror))
    proc = run_snakemake(tmp_path, "realdata", "--cores", "2", "--configfile", str(config))
    assert proc.returncode == 0, proc.stderr[-4000:]
    root = tmp_path / "results" / "data"
    files = ("ml-25m.zip", "jester_dataset_2.zip", "ml-latest-small.zip")
    assert leftovers(root / "archives") == sorted(n for f in files
                                                  for n in (f, f + ".verified.json"))
    factors = read_factors(root / "ml-25m" / "svd_k50_prefix10.h5")
    assert factors.user_factors.shape == (300, 50) and factors.item_factors.shape == (120, 50)
    assert factors.fit.token == "prefix10" and read_factors(
        root / "jester-2" / "svd_k50_split80.h5").fit.token == "split80"
    cfg = yaml.safe_load(config.read_text())
    for name, exp in cfg["experiments"].items():
        summary = pd.read_csv(tmp_path / SMOKE_RESULTS / name / "summary.csv")
        assert set(summary["algorithm"]) == {a["label"] for a in exp["algorithms"]}
        assert summary["accept_rate"].between(0.05, 1.0).all()
        assert (summary["T"] == exp["instance"]["horizon"]).all()
        # provenance: the fixtures' checksums are overrides, so never the pinned release
        assert (~summary["data_pinned"]).all() and summary["feature_auc"].between(0, 1).all()
        (archive,) = datasets()[exp["instance"]["dataset"]]
        assert set(summary["data_archives"]) == {archive}
        assert set(summary["data_sha256"]) == {sha256_of(tmp_path / "mirror" / archive)}
        assert set(summary["features_fit"]) == {exp["instance"]["features"].split("_")[-1][:-3]}
        assert set(summary["features_leak_free"]) == {not name.endswith("wholelog")}
        stems = [f"tables/{name}_ctr.md", f"figures/{name}_ctr.png"]
        if any(o.get("published") for o in exp["outputs"]):
            stems.append(f"tables/{name}_claims.md")
        for stem in stems:
            assert (tmp_path / SMOKE_PAPER / stem).stat().st_size > 0
        assert "NOT the pinned release" in (tmp_path / SMOKE_PAPER / stems[0]).read_text()
    again = run_snakemake(tmp_path, "realdata", "-n", "--configfile", str(config))
    assert "Nothing to be done" in again.stdout + again.stderr
    report = run_snakemake(tmp_path, f"{SMOKE_PAPER}/reproduction.md", "--cores", "1",
                           "--configfile", str(config))
    assert report.returncode == 0, report.stderr[-4000:]
    md = (tmp_path / SMOKE_PAPER / "reproduction.md").read_text()
    for name in ("ts_movielens", "ts_movielens_wholelog", "ts_jester", "ts_jester_wholelog"):
        assert f"### realdata:{name} — " in md
    assert "not comparable: made from ml-25m.zip (sha256 " in md
    assert "SVD fit on the earliest 10 % of events only (leak-free)" in md
    assert "SVD fit on the whole log (the replayed ratings included)" in md


def test_small_movielens_runs_alone_from_its_one_archive(tmp_path):
    """`snakemake results/ts_movielens_small/summary.csv` needs only ml-latest-small.zip; a
    release with another checksum runs once its sha256 is given, recorded as not pinned."""
    mirror = tmp_path / "mirror"
    archive = small_zip(mirror)
    target = f"{SMOKE_RESULTS}/ts_movielens_small/summary.csv"
    config = realdata_config(tmp_path, mirror=str(mirror))
    refused = run_snakemake(tmp_path, target, "--cores", "2", "--configfile", str(config))
    assert refused.returncode != 0
    line = next(ln for ln in refused.stderr.splitlines() if ln.startswith("dpbandits: error:"))
    assert f"set data: files: ml-latest-small.zip: sha256: {sha256_of(archive)}" in line
    config = realdata_config(tmp_path, mirror=str(mirror),
                             files={archive.name: {"sha256": sha256_of(archive)}})
    proc = run_snakemake(tmp_path, target, "--cores", "2", "--configfile", str(config))
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert leftovers(tmp_path / "results" / "data" / "archives") == [
        "ml-latest-small.zip", "ml-latest-small.zip.verified.json"]
    stamp = json.loads((tmp_path / "results" / "data" / "archives" /
                        "ml-latest-small.zip.verified.json").read_text())
    assert stamp["sha256"] == sha256_of(archive) and stamp["pinned"] is False
    assert stamp["pinned_sha256"] == pinned()["ml-latest-small.zip"].sha256
    summary = pd.read_csv(tmp_path / target)
    exp = load_config(config)["experiments"]["ts_movielens_small"]
    assert len(summary) == len(exp["algorithms"]) * exp["trials"]
    assert (~summary["data_pinned"]).all()
    assert set(summary["features_fit"]) == {"prefix10"}


def test_missing_archive_offline_fails_fast_with_the_placement_message(tmp_path):
    names = ("ml-25m.zip", "jester_dataset_2.zip", "ml-latest-small.zip")
    files = {f: {"urls": [f"https://127.0.0.1:9/{f}"]} for f in names}
    config = realdata_config(tmp_path, files=files, timeout=5)
    start = time.perf_counter()
    proc = run_snakemake(tmp_path, "realdata", "--cores", "1", "--configfile", str(config))
    assert proc.returncode != 0
    assert time.perf_counter() - start < 120
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("dpbandits: error:")]
    assert lines, proc.stderr[-3000:]
    message = lines[0]
    name = next(n for n in names if f"cannot fetch {n}" in message)
    assert f"Place {name} at results/data/archives/{name}" in message
    assert "data: mirror:" in message
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
    proc = run_snakemake(tmp_path, "results/data/ml-25m/svd_k50_prefix10.h5", "--cores", "1",
                         "--configfile", str(config))
    assert proc.returncode != 0
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("dpbandits: error:")]
    assert lines and "does not match the pinned" in lines[0] and "ml-25m.zip" in lines[0]
    assert not (archives / "ml-25m.zip.verified.json").exists()
    assert not (tmp_path / "results" / "data" / "raw" / "ml-25m").exists()
