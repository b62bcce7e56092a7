"""SLURM profile at scale: dry-run time of the full paper sweep, job and submission counts, and
smoke shards on a real (local) SLURM cluster with bundled groups vs one array job.

    .venv/bin/python benchmarks/bench_slurm.py                       # dry run + group vs array
    .venv/bin/python benchmarks/bench_slurm.py --modes group,group:20 --experiments all
    .venv/bin/python benchmarks/bench_slurm.py --modes none           # dry run only

Per-shard overhead = (SLURM allocation time of the simulate jobs - the shards' own compute
time, i.e. the summed `wall_time` stored in the shard files) / number of shards. Writes
benchmarks/results/bench_slurm.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import h5py
import yaml

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PROFILE = REPO / "workflow" / "profiles" / "slurm"
OUT = REPO / "benchmarks" / "results" / "bench_slurm.json"


def snakemake(*args: str) -> list[str]:
    return [str(BIN / "snakemake"), "-s", str(REPO / "Snakefile"), *args]


def environment() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def timed(cmd: list[str], cwd: Path, timeout: float) -> tuple[subprocess.CompletedProcess, float,
                                                                 float]:
    """Run a command; wall seconds and CPU seconds (user + sys) of it and its children.

    On timeout the command gets SIGINT (Snakemake then cancels its SLURM jobs) and the
    returned process has returncode None."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with subprocess.Popen(cmd, cwd=cwd, env=environment(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as popen:
        try:
            out, err = popen.communicate(timeout=timeout)
            code = popen.returncode
        except subprocess.TimeoutExpired:
            popen.send_signal(signal.SIGINT)
            out, err = popen.communicate()
            code = None
    proc = subprocess.CompletedProcess(cmd, code, out, err)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return proc, wall, cpu


def job_blocks(log: str) -> list[dict]:
    """Jobs of a dry-run log: kind (rule / localrule / group), name, has output."""
    blocks, current = [], None
    for line in log.splitlines():
        head = re.match(r"^(?:\[[^\]]+\] )?(rule|localrule|checkpoint) ([\w.-]+):$", line)
        group = re.match(r"^(?:\[[^\]]+\] )?Group job (\S+) ", line)
        if group:
            current = None
            blocks.append({"kind": "group", "name": group.group(1), "output": True})
        elif head:
            current = {"kind": head.group(1), "name": head.group(2), "output": False}
            blocks.append(current)
        elif current is not None and line.startswith("    output:"):
            current["output"] = True
    return blocks


def job_stats(log: str) -> dict[str, int]:
    """The `Job stats` table of a dry run (rule -> count)."""
    table = log.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    counts = {}
    for line in table.splitlines():
        match = re.match(r"^(\S+)\s+(\d+)$", line.strip())
        if match:
            counts[match.group(1)] = int(match.group(2))
    return counts


def dry_run(profile: Path) -> dict:
    """`snakemake -n` over every experiment at paper scale (targets all + realdata)."""
    with tempfile.TemporaryDirectory(prefix="dpb-bench-dry-") as tmp:
        proc, wall, cpu = timed(
            snakemake("all", "realdata", "--profile", str(profile), "--configfile",
                      str(REPO / "config" / "config.yaml"), "-n"),
            Path(tmp), timeout=600,
        )
    if proc.returncode != 0:
        raise SystemExit(f"dry run failed:\n{proc.stderr[-3000:]}")
    log = proc.stdout + proc.stderr
    stats = job_stats(log)
    blocks = job_blocks(log)
    groups = sum(b["kind"] == "group" for b in blocks)
    single = sum(b["kind"] == "rule" and b["output"] for b in blocks)
    unbundled = single + stats.get("simulate", 0)
    return {
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "jobs": stats.get("total", 0),
        "simulate_jobs": stats.get("simulate", 0),
        "job_counts": stats,
        "slurm_submissions_bundled": groups + single,
        "slurm_submissions_unbundled": unbundled,
        "bundles": groups,
    }


def slurm_ready() -> str | None:
    if shutil.which("sbatch") is None:
        return "sbatch not found"
    proc = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
    if proc.returncode != 0 or not re.search(r"idle|mixed|allocated", proc.stdout):
        return f"sinfo: {proc.stderr.strip() or proc.stdout.strip() or 'no usable node'}"
    return None


class SqueueRecorder(threading.Thread):
    """Poll `squeue --states=all` so finished jobs are recorded before SLURM forgets them."""

    def __init__(self, interval: float = 3.0) -> None:
        super().__init__(daemon=True)
        self.interval = interval
        self.jobs: dict[str, dict] = {}
        self.stop = threading.Event()

    def poll(self) -> None:
        proc = subprocess.run(
            ["squeue", "--states=all", "-h", "-o", "%i|%j|%S|%e|%T|%k"],
            capture_output=True, text=True,
        )
        for line in proc.stdout.splitlines():
            jobid, name, start, end, state, comment = line.split("|", 5)
            if "[" in jobid:  # the still-pending rest of an array ("12_[3-24]"), not a job
                continue
            self.jobs[jobid] = {"id": jobid, "name": name, "start": start, "end": end,
                                "state": state, "comment": comment}

    def run(self) -> None:
        while not self.stop.is_set():
            self.poll()
            self.stop.wait(self.interval)


def seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def shard_compute_seconds(results: Path) -> tuple[int, float]:
    paths = sorted(results.glob("*/shards/**/*.h5"))
    total = 0.0
    for path in paths:
        with h5py.File(path, "r") as handle:
            total += float(handle["wall_time"][()].sum())
    return len(paths), total


def mode_profile(mode: str, folder: Path) -> Path:
    """The SLURM profile as shipped (group), with bundles of N (group:N), with simulate jobs
    submitted as one SLURM array (array), or one SLURM job per shard (single)."""
    config = yaml.safe_load((PROFILE / "config.yaml").read_text())
    if mode.startswith("group:"):
        config["group-components"] = {"sims": int(mode.split(":", 1)[1])}
    elif mode in ("array", "single"):
        config.pop("groups", None)
        config.pop("group-components", None)
        if mode == "array":
            config["slurm-array-jobs"] = "simulate"
    elif mode != "group":
        raise SystemExit(f"unknown mode {mode!r}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return folder


def smoke_shards(experiments: str) -> list[str]:
    """Shard files (targets) of the synthetic smoke experiments named, or of all of them."""
    from dpbandits.config import all_shards, load_config

    shards = all_shards(load_config(REPO / "config" / "smoke.yaml"), group="synthetic")
    names = list(shards) if experiments == "all" else experiments.split(",")
    unknown = [n for n in names if n not in shards]
    if unknown:
        raise SystemExit(f"unknown synthetic smoke experiment(s): {', '.join(unknown)}")
    return [f"results/{s.path}" for name in names for s in shards[name]]


def cluster_run(mode: str, targets: list[str], timeout: float) -> dict:
    """The simulate stage of the smoke sweep through SLURM in one bundling mode."""
    tmp = Path(tempfile.mkdtemp(prefix=f"dpb-bench-{mode.replace(':', '')}-"))
    profile = mode_profile(mode, tmp / "profile")
    workdir = tmp / "run"
    workdir.mkdir()
    recorder = SqueueRecorder()
    recorder.start()
    try:
        proc, wall, _ = timed(
            snakemake(*targets, "--profile", str(profile), "--configfile",
                      str(REPO / "config" / "smoke.yaml")),
            workdir, timeout=timeout,
        )
    finally:
        recorder.stop.set()
        recorder.join()
        recorder.poll()
    log = proc.stdout + proc.stderr
    if proc.returncode is None:
        shutil.rmtree(tmp, ignore_errors=True)
        return {"mode": mode, "timed_out_after_seconds": timeout}
    if proc.returncode != 0:
        raise SystemExit(f"{mode} run failed:\n{log[-3000:]}")
    run_id = re.search(r"SLURM run ID: (\S+)", log).group(1)
    mine = [j for j in recorder.jobs.values() if j["name"] == run_id]
    sims = [j for j in mine if "simulate" in j["comment"]]
    missing = [j for j in sims if j["state"] != "COMPLETED" or "T" not in j["end"]]
    alloc = sum(seconds(j["end"]) - seconds(j["start"]) for j in sims if j not in missing)
    n_shards, compute = shard_compute_seconds(workdir / "results")
    shutil.rmtree(tmp, ignore_errors=True)
    return {
        "mode": mode,
        "sweep_wall_seconds": round(wall, 1),
        "sbatch_submissions": len({j["id"].split("_")[0] for j in mine}),
        "slurm_jobs": len(mine),
        "slurm_jobs_for_simulate": len(sims),
        "shards": n_shards,
        "shard_compute_seconds": round(compute, 1),
        "simulate_allocation_seconds": round(alloc, 1),
        "overhead_per_shard_seconds": round((alloc - compute) / n_shards, 1) if n_shards else None,
        "unrecorded_jobs": len(missing),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="group,array",
                        help="comma-separated cluster modes: group (the profile), group:N "
                        "(bundles of N), array, single (one job per shard), or none")
    parser.add_argument("--experiments", default="glm_table2,linear_fig2",
                        help="synthetic smoke experiments whose shards the cluster runs "
                        "compute (comma-separated, or 'all')")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per cluster run")
    args = parser.parse_args()

    load = os.getloadavg()
    report: dict = {"cpus": os.cpu_count(), "load_average_at_start": [round(x, 2) for x in load]}
    bundle = yaml.safe_load((PROFILE / "config.yaml").read_text())["group-components"]["sims"]
    report["bundle_size"] = bundle

    dry = dry_run(PROFILE)
    report["dry_run"] = dry
    print(f"dry run (snakemake -n, all experiments, paper scale): {dry['wall_seconds']:.1f} s "
          f"wall, {dry['cpu_seconds']:.1f} s CPU")
    print(f"  jobs: {dry['jobs']} ({dry['simulate_jobs']} simulate)")
    print(f"  SLURM submissions: {dry['slurm_submissions_bundled']} with bundles of {bundle} "
          f"({dry['bundles']} bundles), {dry['slurm_submissions_unbundled']} without; "
          f"expected bundles ceil({dry['simulate_jobs']}/{bundle}) = "
          f"{math.ceil(dry['simulate_jobs'] / bundle)}")

    modes = [m for m in args.modes.split(",") if m and m != "none"]
    if modes:
        reason = slurm_ready()
        if reason:
            print(f"cluster runs skipped: {reason} (tools/slurm/up.sh starts a local cluster)")
            modes = []
    report["cluster"] = []
    targets = smoke_shards(args.experiments) if modes else []
    report["cluster_experiments"] = args.experiments
    for mode in modes:
        print(f"{len(targets)} smoke shards ({args.experiments}) on the local SLURM cluster, "
              f"mode {mode} ...", flush=True)
        result = cluster_run(mode, targets, args.timeout)
        report["cluster"].append(result)
        if "timed_out_after_seconds" in result:
            print(f"  timed out after {args.timeout:.0f} s")
            continue
        print(f"  {result['sweep_wall_seconds']:.0f} s in all; {result['sbatch_submissions']} "
              f"sbatch calls, {result['slurm_jobs']} SLURM jobs/array tasks for "
              f"{result['shards']} shards; "
              f"overhead {result['overhead_per_shard_seconds']} s per shard "
              f"(allocation {result['simulate_allocation_seconds']} s, shard compute "
              f"{result['shard_compute_seconds']} s)")
    finished = [r for r in report["cluster"] if "sweep_wall_seconds" in r]
    if len(finished) > 1:
        best = min(finished, key=lambda r: r["sweep_wall_seconds"])
        print(f"finishes sooner: {best['mode']} ({best['sweep_wall_seconds']:.0f} s)")
        report["fastest_mode"] = best["mode"]
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2) + "\n")
    print(f"load average {report['load_average_at_start']} -> {report['load_average_at_end']} "
          f"on {report['cpus']} CPUs; written {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
