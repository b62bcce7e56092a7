"""Wall time, CPU time and shard compute of a whole `snakemake` run (paper scale or smoke).

Runs `snakemake --cores N` (the workflow profile `profiles/default` applies) from scratch into a
temporary folder (a config overlay sets `results:` and `paper:` there) with a fresh
`DPBANDITS_CACHE` (`--kernels cold`: every kernel compiled in the run, as on a fresh clone;
`--kernels warm`, the default: the compiled kernels copied in from the user's cache, compiled
there first if missing, and nothing else cached), then reports: wall seconds, CPU
seconds of all processes, shard compute (the trials' own wall time, summed over every shard),
compute ÷ wall (how busy the cores were with simulation rather than start-up and scheduling,
≤ N) and the jobs run, per experiment and in total, with the CPU model; and, from the run's
fork server log, the CPU seconds of its served jobs per job script. Writes
benchmarks/results/bench_reproduce_<scale>.csv and, per algorithm entry, ..._by_algorithm.csv
(compare two code states entry by entry) and, per served job script, ..._served.csv.

    .venv/bin/python benchmarks/bench_reproduce.py [--scale paper|smoke] [--cores 2]
        [--kernels warm|cold] [--experiments glm_table2 ...]  (default: every synthetic one)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import h5py
from machine import RESULTS, cpu_model, machine_line, write_rows

REPO = Path(__file__).parents[1]
CONFIGS = {"paper": REPO / "config" / "config.yaml", "smoke": REPO / "config" / "smoke.yaml"}


def shard_compute(results: Path) -> dict[tuple[str, str], tuple[int, float]]:
    """Per (experiment, algorithm label): (shards, Σ of the trials' wall seconds)."""
    out: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0])
    for path in results.glob("*/shards/**/*.h5"):
        with h5py.File(path, "r") as handle:
            algorithm = json.loads(handle.attrs["spec"])["algorithm"]
            entry = out[(path.relative_to(results).parts[0], algorithm)]
            entry[0] += 1
            entry[1] += float(handle["wall_time"][()].sum())
    return {key: (int(n), s) for key, (n, s) in sorted(out.items())}


def served_cpu(log: Path) -> dict[str, tuple[int, float]]:
    """Per job script served by the run's fork server: (jobs, Σ of their CPU seconds)."""
    scripts: dict[str, str] = {}
    out: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for line in log.read_text().splitlines() if log.is_file() else []:
        if started := re.fullmatch(r"job (\d+): (\w+)", line):
            scripts[started[1]] = started[2]
        elif ended := re.fullmatch(r"job (\d+): exit -?\d+, ([\d.]+) CPU-s", line):
            entry = out[scripts.pop(ended[1], "?")]
            entry[0] += 1
            entry[1] += float(ended[2])
    return {name: (int(n), s) for name, (n, s) in sorted(out.items())}


def per_experiment(compute: dict[tuple[str, str], tuple[int, float]]
                   ) -> dict[str, tuple[int, float]]:
    """The per-algorithm figures summed per experiment."""
    out: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for (name, _), (n, s) in compute.items():
        out[name][0] += n
        out[name][1] += s
    return {name: (int(n), s) for name, (n, s) in sorted(out.items())}


def copy_compiled_kernels(config: Path, cores: int, cache: Path) -> None:
    """The user's compiled kernels of this source version (compiled there first, for the
    config's warm-up specs, if missing) copied into `cache`, which holds nothing else."""
    from dpbandits import jit
    from dpbandits.config import all_shards, load_config
    from dpbandits.warm_up import compile_kernels, tiny_specs

    shards = all_shards(load_config(config))
    compile_kernels(tiny_specs([s.spec for exp in shards.values() for s in exp]), cores)
    folder = jit.cache_folder()
    shutil.copytree(folder, cache / folder.relative_to(jit.cache_root().parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=sorted(CONFIGS), default="paper")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--kernels", choices=("warm", "cold"), default="warm")
    parser.add_argument("--experiments", nargs="+", default=[],
                        help="run only these experiments' summaries (default: everything)")
    args = parser.parse_args()
    print(machine_line(), flush=True)
    with tempfile.TemporaryDirectory(prefix="dpb-bench-") as tmp:
        work = Path(tmp)
        cache = work / "cache"
        if args.kernels == "warm":
            copy_compiled_kernels(CONFIGS[args.scale], args.cores, cache)
        overlay = work / "bench.yaml"
        overlay.write_text(f"base: {CONFIGS[args.scale]}\nresults: {work}/results\n"
                           f"paper: {work}/paper\n")
        command = [str(Path(sys.executable).parent / "snakemake"), "--cores", str(args.cores),
                   *(f"{work}/results/{name}/summary.csv" for name in args.experiments),
                   "--configfile", str(overlay)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True,
                              env={**os.environ, "DPBANDITS_CACHE": str(cache)})
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            sys.exit(f"snakemake failed:\n{proc.stderr[-3000:]}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        by_algorithm = shard_compute(work / "results")
        compute = per_experiment(by_algorithm)
        served = served_cpu(work / "results" / "logs" / "forkserver.log")
    total_shards = sum(n for n, _ in compute.values())
    total_compute = sum(s for _, s in compute.values())
    print(f"{args.scale} scale, --cores {args.cores}: {wall:.1f} s wall, {cpu:.1f} CPU-s, "
          f"{total_shards} shards, shard compute {total_compute:.1f} s, "
          f"compute/wall {total_compute / wall:.2f}")
    if served:
        print("served jobs' CPU-s by script: " + ", ".join(
            f"{name} {s:.1f} ({n} jobs)" for name, (n, s) in served.items()))
    model = cpu_model()
    scope = "+".join(args.experiments) or "(all)"
    rows = [{"cpu": model, "scale": args.scale, "cores": args.cores, "experiment": name,
             "shards": n, "shard_compute_s": round(s, 2)} for name, (n, s) in compute.items()]
    rows.append({"cpu": model, "scale": args.scale, "cores": args.cores, "experiment": scope,
                 "shards": total_shards, "shard_compute_s": round(total_compute, 2),
                 "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                 "compute_over_wall": round(total_compute / wall, 3)})
    for row in rows[:-1]:
        row.update(wall_s="", cpu_s="", compute_over_wall="")
    suffix = f"_{scope}" if args.experiments else ""
    write_rows(RESULTS / f"bench_reproduce_{args.scale}{suffix}.csv", rows)
    write_rows(RESULTS / f"bench_reproduce_{args.scale}{suffix}_by_algorithm.csv",
               [{"cpu": model, "scale": args.scale, "experiment": name, "algorithm": algorithm,
                 "shards": n, "shard_compute_s": round(s, 2)}
                for (name, algorithm), (n, s) in by_algorithm.items()])
    if served:
        write_rows(RESULTS / f"bench_reproduce_{args.scale}{suffix}_served.csv",
                   [{"cpu": model, "scale": args.scale, "script": name, "jobs": n,
                     "cpu_s": round(s, 2)} for name, (n, s) in served.items()])


if __name__ == "__main__":
    main()
