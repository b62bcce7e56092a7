"""A policy's compiled rounds on pre-drawn tables against select → pull → update: the same
bits, and the CPU of each.

A policy whose class declares `plays_tables` plays a run on pre-drawn outcome tables in one
compiled loop (`play_table`) calling the same decision and update kernels as its `select` and
`update` (docs/architecture.md, "Compiled kernels"). For every shard of the given experiments
whose algorithm has that path (cut to `--trials` trials), runs `run_shard` in fresh one-thread
processes sharing one kernel cache, once as the runner plays it and once with `plays_tables`
switched off on the policy's class, each twice (the first run compiles or loads the kernels; the
second is timed); which goes first alternates from shard to shard. Checks that everything the
shard stores except `wall_time` has the same digest, prints the CPU seconds of both and their
ratio per shard and in total, writes `results/bench_tables.csv`, and exits with status 1 when
any shard differs.

    .venv/bin/python benchmarks/bench_fast_paths.py [EXPERIMENT ...] [--trials 5]
        [--algorithm SUBSTRING] [--config config/config.yaml]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from machine import RESULTS, machine_line

from dpbandits.config import experiment_shards, load_config
from dpbandits.policies import get_policy_class
from dpbandits.runner import plays_tables

REPO = Path(__file__).resolve().parents[1]
EXPERIMENTS = ("ts_synthetic", "glm_table2", "glm_fig1_logistic", "glm_shuffle")
TIMED = """
import json, sys, time
sys.path.insert(0, sys.argv[3])
from bench_fast_paths import digest
from dpbandits.instances.registry import build_instance
from dpbandits.policies import get_policy_class
from dpbandits.simulate import run_shard
spec = json.loads(sys.argv[1])
cls = get_policy_class(spec["policy"])
if sys.argv[2] == "tables-off":
    cls.plays_tables = False
run_shard(spec)
start = time.process_time(); build_instance(dict(spec["instance"]))
build = time.process_time() - start
start = time.process_time(); data = run_shard(spec)
cpu = time.process_time() - start - build
print(json.dumps({"cpu": cpu, "digest": digest(data)}))
"""


def digest(data: Any) -> str:
    """SHA-256 of everything a shard stores except its wall times, floats by their bits."""
    h = hashlib.sha256()

    def feed(value: Any) -> None:
        if isinstance(value, dict):
            for key in sorted(value, key=str):
                h.update(repr(key).encode())
                feed(value[key])
        elif isinstance(value, list | tuple):
            h.update(f"[{len(value)}".encode())
            for item in value:
                feed(item)
        elif isinstance(value, np.ndarray | np.generic | float):
            array = np.ascontiguousarray(value)
            h.update(f"{array.dtype.str}{array.shape}".encode())
            h.update(array.tobytes())
        else:
            h.update(repr(value).encode())

    feed({k: v for k, v in vars(data).items() if k != "wall_time"})
    return h.hexdigest()


def fast_path_shards(config_path: Path, experiments: list[str], algorithm: str,
                     trials: int) -> list[dict[str, Any]]:
    """The shards (cut to `trials` trials) whose algorithm plays tables."""
    config = load_config(config_path)
    specs = []
    for name in experiments:
        if name not in config["experiments"]:
            sys.exit(f"bench_fast_paths: experiment = {name!r} is not allowed; allowed: "
                     + ", ".join(sorted(config["experiments"])))
        for shard in experiment_shards(name, config["experiments"][name]):
            spec = shard.spec
            if plays_tables(get_policy_class(spec["policy"])) and algorithm in spec["algorithm"]:
                specs.append({**spec, "trials": list(spec["trials"])[:trials]})
    return specs


def timed(spec: dict[str, Any], mode: str, cache: str) -> dict[str, Any]:
    """CPU seconds and digest of the second run of the shard in a fresh process."""
    env = {**os.environ, "DPBANDITS_CACHE": cache, "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", TIMED, json.dumps(spec), mode,
                           str(Path(__file__).parent)],
                          env=env, capture_output=True, text=True, cwd=REPO)
    if proc.returncode:
        sys.exit(f"bench_fast_paths: {spec['algorithm']} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiments", nargs="*")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--algorithm", default="", help="only algorithm labels containing this")
    parser.add_argument("--config", type=Path, default=REPO / "config" / "config.yaml")
    args = parser.parse_args()
    if args.trials < 1:
        sys.exit(f"bench_fast_paths: --trials = {args.trials} is not allowed; must be >= 1")
    specs = fast_path_shards(args.config, args.experiments or list(EXPERIMENTS), args.algorithm,
                             args.trials)
    if not specs:
        sys.exit("bench_fast_paths: no shard of these experiments plays tables")
    print(machine_line())
    rows, differ = [], 0
    on, off = "tables", "tables-off"
    cache = tempfile.mkdtemp(prefix="dpb-tables-")
    for k, spec in enumerate(specs):
        order = (on, off) if k % 2 == 0 else (off, on)
        runs = {mode: timed(spec, mode, cache) for mode in order}
        same = runs[on]["digest"] == runs[off]["digest"]
        differ += not same
        fast, plain = runs[on]["cpu"], runs[off]["cpu"]
        rows.append({"experiment": spec["experiment"], "algorithm": spec["algorithm"],
                     "epsilon": spec["epsilon"], "instance": spec["instance_index"],
                     "trials": len(spec["trials"]), "cpu_fast": round(fast, 3),
                     "cpu_plain": round(plain, 3), "same_bits": same})
        print(f"{'same' if same else 'DIFFERENT'}  {spec['experiment']} {spec['algorithm']} "
              f"eps={spec['epsilon']} inst={spec['instance_index']}: tables {fast:.2f} "
              f"CPU-s, without {plain:.2f} CPU-s, ×{plain / fast:.2f}", flush=True)
    total_fast = sum(r["cpu_fast"] for r in rows)
    total_plain = sum(r["cpu_plain"] for r in rows)
    print(f"{len(rows)} shards, {differ} with different bits; tables {total_fast:.1f} "
          f"CPU-s, without {total_plain:.1f} CPU-s, ×{total_plain / total_fast:.2f}")
    RESULTS.mkdir(exist_ok=True)
    with open(RESULTS / "bench_tables.csv", "w", newline="") as handle:
        handle.write(f"# {machine_line()}\n")
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    shutil.rmtree(cache, ignore_errors=True)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
