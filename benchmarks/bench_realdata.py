"""Parse + features + `ts_movielens` at paper scale on an ML-25M-shaped log, with real snakemake.

Goal (docs/realdata.md, "Speed"): ≤ 15 min wall on 2 idle cores, peak memory ≤ 8 GB.

    .venv/bin/python benchmarks/bench_realdata.py [--workdir DIR] [--cores 2]
        [--algorithms LinUCB LinTS ...] [--trials 5] [--epsilons 0.5 1 2 5 10] [--data-only]

Writes (once, not timed) `ml-25m.zip` in the upstream layout with `movielens_like.py` (25 M
ratings, 162,541 users, about 59 k movies: a synthetic log of the release's shape), then runs
`snakemake` in a fresh working folder with a config overlay holding only `ts_movielens` (the
archive comes from a mirror folder under its own sha256, as any non-pinned release would), in two
timed phases: the data (verify, extract, parse, the `online14` features) and the experiment
(every shard, then summary.csv). For each phase: wall seconds, CPU seconds of every process, the
peak of the summed resident memory of snakemake and all its descendants (sampled every 0.2 s;
pages shared after a fork are counted in each process, so this bounds the use from above) and the
largest single process; then the data stages' own times from their Snakemake benchmark files,
and the trials' seconds per algorithm from the shards. `--algorithms` keeps only those entries of
`ts_movielens` (by label).
Writes benchmarks/results/bench_realdata.csv.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import h5py
import psutil
import yaml
from machine import RESULTS, cpu_model, machine_line, write_rows
from movielens_like import SHAPES, sha256_of, write_archive

REPO = Path(__file__).parents[1]
EXPERIMENT = "ts_movielens"


class Peak(threading.Thread):
    """Samples the summed RSS of a process and its descendants, and the largest single RSS."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.root = psutil.Process(pid)
        self.total = self.single = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.2):
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.Error:
                continue
            sizes = []
            for proc in procs:
                try:
                    sizes.append(proc.memory_info().rss)
                except psutil.Error:
                    continue
            self.total = max(self.total, sum(sizes))
            self.single = max(self.single, max(sizes, default=0))


def overlay(workdir: Path, archive: Path, args: argparse.Namespace) -> Path:
    """A config holding only ts_movielens, the archive from its folder under its sha256."""
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    experiments: dict[str, object] = {name: None for name in base["experiments"]
                                      if name != EXPERIMENT}
    mine = base["experiments"][EXPERIMENT]
    changes: dict[str, object] = {}
    if args.algorithms:
        known = {a.get("label", a["policy"]) for a in mine["algorithms"]}
        unknown = sorted(set(args.algorithms) - known)
        if unknown:
            sys.exit(f"--algorithms {' '.join(unknown)}: not in {EXPERIMENT}; allowed: "
                     f"{', '.join(sorted(known))}")
        changes["algorithms"] = [a for a in mine["algorithms"]
                                 if a.get("label", a["policy"]) in args.algorithms]
    if args.trials:
        changes["trials"] = args.trials
    if args.epsilons:
        changes["epsilons"] = args.epsilons
    experiments[EXPERIMENT] = changes or {}
    config = {"base": str(REPO / "config" / "config.yaml"), "results": "results",
              "paper": "paper",
              "data": {"root": "results/data", "mirror": str(archive.parent),
                       "files": {archive.name: {"sha256": sha256_of(archive)}}},
              "experiments": experiments}
    path = workdir / "bench_realdata.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def timed(command: list[str], workdir: Path, log: Path) -> dict[str, float]:
    """Run a command; its wall and CPU seconds and memory peaks (or exit with its error)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(command, cwd=workdir, stdout=out, stderr=subprocess.STDOUT)
        peak = Peak(proc.pid)
        peak.start()
        code = proc.wait()
        peak.done.set()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0:
        sys.exit(f"snakemake failed (see {log}):\n{log.read_text()[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "peak_total_gb": peak.total / 1e9,
            "peak_process_gb": peak.single / 1e9}


def stage_seconds(results: Path) -> dict[str, tuple[float, float, float]]:
    """Per data stage with a Snakemake benchmark file: (wall s, CPU s, peak RSS MB)."""
    out = {}
    for tsv in sorted((results / "data" / "benchmarks").glob("*.tsv")):
        header, values = (line.split("\t") for line in tsv.read_text().splitlines()[:2])
        row = dict(zip(header, values, strict=True))
        out[tsv.stem] = (float(row["s"]), float(row["cpu_time"]), float(row["max_rss"]))
    return out


def shard_seconds(results: Path) -> dict[str, tuple[int, float]]:
    """Per algorithm label: (shards, Σ of the trials' wall seconds)."""
    out: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for path in (results / EXPERIMENT / "shards").glob("**/*.h5"):
        with h5py.File(path, "r") as handle:
            entry = out[json.loads(handle.attrs["spec"])["algorithm"]]
            entry[0] += 1
            entry[1] += float(handle["wall_time"][()].sum())
    return {name: (int(n), s) for name, (n, s) in sorted(out.items())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/dpbandits-bench-realdata"))
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--algorithms", nargs="+", default=[])
    parser.add_argument("--trials", type=int, default=0)
    parser.add_argument("--epsilons", nargs="+", type=float, default=[])
    parser.add_argument("--data-only", action="store_true", help="stop after the features")
    args = parser.parse_args()
    print(machine_line(), flush=True)
    archive = args.workdir / "archives" / "ml-25m.zip"
    if not archive.is_file():
        tick = time.perf_counter()
        write_archive(archive.parent, "ml-25m", SHAPES["ml-25m"])
        print(f"wrote {archive} ({archive.stat().st_size / 1e6:.0f} MB) in "
              f"{time.perf_counter() - tick:.0f} s (not timed below)", flush=True)
    run = args.workdir / "run"
    if run.exists():
        subprocess.run(["rm", "-rf", str(run)], check=True)
    run.mkdir(parents=True)
    config = overlay(run, archive, args)
    options = ["--cores", str(args.cores), "--scheduler", "greedy", "--configfile", str(config)]
    snakemake = [str(Path(sys.executable).parent / "snakemake"), "-s", str(REPO / "Snakefile")]
    exp = yaml.safe_load(config.read_text())
    features = "results/data/ml-25m/svd_k47_online14.h5"
    phases = {"data": timed([*snakemake, features, *options], run, run / "data.log")}
    stages = stage_seconds(run / "results")
    if not args.data_only:
        phases[EXPERIMENT] = timed([*snakemake, f"results/{EXPERIMENT}/summary.csv", *options],
                                   run, run / "experiment.log")
    model = cpu_model()
    rows = []
    for phase, m in phases.items():
        print(f"{phase}: {m['wall_s']:.1f} s wall, {m['cpu_s']:.1f} CPU-s, peak memory "
              f"{m['peak_total_gb']:.2f} GB (all processes), {m['peak_process_gb']:.2f} GB "
              "(largest process)", flush=True)
        rows.append({"cpu": model, "phase": phase, **{k: round(v, 2) for k, v in m.items()}})
    total = {k: sum(m[k] for m in phases.values()) for k in ("wall_s", "cpu_s")}
    print(f"total: {total['wall_s']:.1f} s wall ({total['wall_s'] / 60:.1f} min), "
          f"{total['cpu_s']:.1f} CPU-s; goal <= 900 s wall on 2 idle cores, <= 8 GB")
    print("data stages (wall s, CPU s, peak RSS MB): " + ", ".join(
        f"{k} {w:.1f}, {c:.1f}, {m:.0f}" for k, (w, c, m) in stages.items()))
    if not args.data_only:
        per = shard_seconds(run / "results")
        print("trials' seconds per algorithm: " + ", ".join(
            f"{name} {s:.1f} ({n} shards)" for name, (n, s) in per.items()))
        rows.extend({"cpu": model, "phase": f"{EXPERIMENT}:{name}", "shards": n,
                     "shard_compute_s": round(s, 2)} for name, (n, s) in per.items())
    algorithms = [a.get("label", a["policy"]) for a in
                  (exp["experiments"][EXPERIMENT] or {}).get("algorithms", [])] or ["all"]
    for row in rows:
        row.setdefault("shards", "")
        row.setdefault("shard_compute_s", "")
        for key in ("wall_s", "cpu_s", "peak_total_gb", "peak_process_gb"):
            row.setdefault(key, "")
        row["algorithms"] = " ".join(algorithms)
    write_rows(RESULTS / "bench_realdata.csv", rows)


if __name__ == "__main__":
    main()
