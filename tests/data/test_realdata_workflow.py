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
from dpbandits.data.features import feature_meta
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


def outputs(workdir: Path) -> list[Path]:
    """Every file of the run's results (Snakemake's own bookkeeping aside)."""
    return sorted(p for p in (workdir / "results").rglob("*") if p.is_file())


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
    online = feature_meta(root / "ml-25m" / "svd_k47_online.h5")
    assert (online["fit"], online["k"], online["n_users"], online["n_items"]) == \
        ("online", 47, 300, 120)
    jester = read_factors(root / "jester-2" / "svd_k47_split80.h5")
    assert jester.fit.token == "split80" and jester.user_bias is not None
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
        assert summary["feature_coverage"].between(0, 1).all() and summary["log_ctr"].notna().all()
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
    assert "online features: each step's from the earlier events only" in md
    assert "SVD fit on the whole log (the replayed ratings included)" in md


def test_dry_run_refuses_an_infeasible_horizon_once_the_data_is_parsed(tmp_path):
    """`snakemake -n` checks each replay's horizon against its parsed log: the Jester fixture
    (9000 ratings, 1800 held out) cannot count the paper's T = 30,000."""
    mirror = tmp_path / "mirror"
    config = realdata_config(tmp_path, mirror=str(mirror), files=fixtures(mirror))
    target = "results/data/jester-2/svd_k47_split80.h5"
    assert run_snakemake(tmp_path, target, "--cores", "1", "--configfile",
                         str(config)).returncode == 0
    cfg = yaml.safe_load(config.read_text())
    cfg["experiments"]["ts_jester"]["instance"]["horizon"] = 30_000
    config.write_text(yaml.safe_dump(cfg, sort_keys=False))
    before = outputs(tmp_path)
    proc = run_snakemake(tmp_path, "realdata", "-n", "--configfile", str(config))
    assert proc.returncode != 0
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("dpbandits: error:")]
    assert len(lines) == 1, proc.stderr[-3000:]
    assert lines[0].startswith("dpbandits: error: config error at experiments/ts_jester/instance")
    assert "horizon = 30000 is not allowed for jester_replay" in lines[0]
    assert "results/data/jester-2/ratings.h5 (the held-out 20 % of" in lines[0]
    assert outputs(tmp_path) == before


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
    assert set(summary["features_fit"]) == {"online"}


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
    proc = run_snakemake(tmp_path, "results/data/ml-25m/svd_k47_online.h5", "--cores", "1",
                         "--configfile", str(config))
    assert proc.returncode != 0
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("dpbandits: error:")]
    assert lines and "ml-25m.zip" in lines[0]
    assert "the value of the config override data: files: ml-25m.zip: sha256" in lines[0]
    assert not (archives / "ml-25m.zip.verified.json").exists()
    assert not (tmp_path / "results" / "data" / "raw" / "ml-25m").exists()
