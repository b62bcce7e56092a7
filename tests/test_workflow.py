"""Real Snakemake runs of the pipeline (smoke config end to end, dry run, bad config)."""

import json
import re
import shutil
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from shard_compare import shard_digests

from dpbandits import numerics
from dpbandits.config import load_config
from dpbandits.outputs import output_files

from conftest import REPO, SMOKE_PAPER, SMOKE_RESULTS, run_snakemake

sys.path.insert(0, str(REPO / "benchmarks"))
from bench_reproduce import served_cpu  # noqa: E402

SMOKE = load_config(REPO / "config" / "smoke.yaml")


@pytest.mark.parametrize(
    "experiment", sorted(n for n, e in SMOKE["experiments"].items() if e["group"] == "synthetic")
)
def test_smoke_run_produces_summary_figure_table(smoke_run: Path, experiment: str):
    summary = pd.read_csv(smoke_run / SMOKE_RESULTS / experiment / "summary.csv")
    for column in ("experiment", "algorithm", "epsilon", "seed", "T", "regret"):
        assert column in summary.columns
    exp = SMOKE["experiments"][experiment]
    assert set(summary["algorithm"]) >= {
        a.get("label", a["policy"]) for a in exp["algorithms"] if "grid" not in a
    }
    assert (summary["regret"] >= 0).all()
    assert (smoke_run / SMOKE_RESULTS / experiment / "curves.h5").is_file()
    files = [f for spec in exp["outputs"] for f in output_files(experiment, spec)]
    assert files
    if exp["paper"] == "glm":
        assert {Path(f).suffix for f in files} >= {".png", ".pdf", ".csv", ".md", ".tex"}
    for f in files:
        assert (smoke_run / SMOKE_PAPER / f).stat().st_size > 0


def test_rerun_has_nothing_to_do(smoke_run: Path):
    proc = run_snakemake(smoke_run, "-n", "--configfile", str(smoke_run / "smoke.yaml"))
    assert proc.returncode == 0
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_dry_run_of_full_config_is_fast(tmp_path: Path):
    start = time.perf_counter()
    proc = run_snakemake(
        tmp_path, "-n", "--quiet", "--configfile", str(REPO / "config" / "config.yaml")
    )
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert elapsed < 60


@pytest.mark.parametrize(
    "path,value,needle",
    [
        (("glm_table2", "epsilons"), [0, 4], "epsilons/0"),
        (("glm_table2", "delta"), 1.0, "delta"),
        (("glm_table2", "instance", "horizon"), 0, "horizon"),
        (("glm_table2", "instance_grid"), {"S": [-1.0]}, "grid point 0"),
        (("glm_table2", "algorithms"), [{"policy": "NoSuch"}], "'NoSuch' is not one of"),
        (("glm_table2", "instance", "horizn"), 300, "'horizn' was unexpected); allowed: K, S"),
        (("linear_fig2", "instance", "noise"), 1.0, "'noise' was unexpected"),
        (("glm_table2", "algorithms"), [{"policy": "GLOC", "params": {"lamO": 1.0}}],
         "'lamO' was unexpected); allowed: lam0, paper_faithful"),
        (("glm_table2", "algorithms"), [{"policy": "GLOC", "params": {"lam0": -1.0}}],
         "algorithms/0/params/lam0"),
        (("ts_synthetic", "algorithms"), [{"policy": "LinUCB", "grid": {"alpah": [1.0]}}],
         "unknown parameter(s) alpah for algorithm LinUCB"),
        (("glm_table2", "algorithms"), [{"policy": "Private-GLM", "params": {
            "strict_steps": 3, "strict_burn_in": 3}}], "strict_burn_in = 3 is not allowed"),
        (("glm_shuffle", "algorithms"), [{"policy": "Shuffle-GLM", "params": {"c_b": 1.0}}],
         "not allowed with accounting = strict"),
    ],
)
def test_bad_config_fails_with_one_line_and_writes_nothing(tmp_path, path, value, needle):
    config = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    target = config["experiments"]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(yaml.safe_dump(config, allow_unicode=True))
    proc = run_snakemake(tmp_path, "--cores", "1", "--configfile", str(cfg))
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if "dpbandits: error" in line]
    assert len(lines) == 1 and needle in lines[0], proc.stderr[-2000:]
    assert not (tmp_path / "results").exists() and not (tmp_path / "paper").exists()


@pytest.mark.parametrize("scheduler", ["ilp", "greedy"])
def test_priorities_order_the_jobs_without_idling_cores(tmp_path: Path, scheduler: str):
    """Four cores, one shard of the experiment with the most shards (first in line) and the
    three of a small one (last): all four start at once, under either Snakemake scheduler."""
    shutil.copy(REPO / "config" / "smoke.yaml", tmp_path / "smoke.yaml")
    first = f"{SMOKE_RESULTS}/glm_table2/shards/RS-GLinUCB_T2/eps~none/inst~0/seeds~0-1.h5"
    # Snakemake's own log lines ("Execute N jobs"): without the workflow profile's logger
    proc = run_snakemake(tmp_path, first, f"{SMOKE_RESULTS}/ts_mean_gram/summary.csv",
                         "--cores", "4", "--scheduler", scheduler, "--workflow-profile", "none",
                         "--configfile", str(tmp_path / "smoke.yaml"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    rounds = re.findall(r"Execute (\d+) jobs", proc.stderr)
    assert rounds and rounds[0] == "4", proc.stderr[-3000:]


def test_smoke_shards_are_bitwise_the_recorded_ones(smoke_run: Path):
    """Refactors keep results: every smoke shard equals its digest in tests/smoke_digests.json
    (tools/dev/smoke_digests.py records them), when the numerical libraries, CPU features and
    BLAS kernels are those of one of its records."""
    records = json.loads((REPO / "tests" / "smoke_digests.json").read_text())["records"]
    fingerprint = numerics.fingerprint()
    recorded = next((r["shards"] for r in records if r["fingerprint"] == fingerprint), None)
    if recorded is None:
        pytest.skip("digests were recorded with other numerical libraries, CPU features or BLAS "
                    f"kernels: {[r['fingerprint'] for r in records]} vs {fingerprint}")
    digests = shard_digests(smoke_run / SMOKE_RESULTS)
    assert sorted(digests) == sorted(recorded)
    changed = [path for path, digest in digests.items() if recorded[path] != digest]
    assert changed == []


def test_smoke_jobs_ran_in_the_runs_fork_server(smoke_run: Path):
    """A local run starts one fork server (dpbandits.forkserver) for its jobs and stops it at
    the end; simulation jobs that start before it listens run alone."""
    log = (smoke_run / SMOKE_RESULTS / "logs" / "forkserver.log").read_text()
    shards = list((smoke_run / SMOKE_RESULTS).glob("*/shards/**/*.h5"))
    experiments = len(list((smoke_run / SMOKE_RESULTS).glob("*/summary.csv")))
    assert 0 < log.count(": simulate") <= len(shards)
    assert log.count(": aggregate") == log.count(": make_outputs") == experiments
    assert log.count(": reproduction") == log.count(": paper_tex") == 1
    assert log.count(": exit ") == log.count(": exit 0")
    assert log.count("fork server stopped") == 1
    assert not server_folder(log).exists()  # removed at the end, and the run's cache in it
    served = served_cpu(smoke_run / SMOKE_RESULTS / "logs" / "forkserver.log")
    assert served["simulate"][0] == log.count(": simulate") and served["simulate"][1] > 0


def test_smoke_jobs_shared_the_runs_cache(smoke_run: Path):
    """Every simulation job of a local run is given the run's cache of shared draws
    (dpbandits.run_cache), inside the fork server's folder."""
    log = (smoke_run / SMOKE_RESULTS / "logs" / "forkserver.log").read_text()
    logs = list((smoke_run / SMOKE_RESULTS / "logs").glob("*/shards/**/*.log"))
    caches = {re.search(r"\(run cache: (\S+)\)", p.read_text())[1] for p in logs}
    assert logs and caches == {f"{server_folder(log)}/run_cache"}


def server_folder(log: str) -> Path:
    """The fork server's folder, from its log's line naming its socket."""
    return Path(re.search(r" on (\S+)/socket$", log, re.MULTILINE)[1])
