"""Trials played in lockstep against one after another: the same bits, and the CPU of each.

For every shard of the given experiments whose algorithm has a lockstep driver (cut to
`--trials` trials), runs `run_shard` twice, each time in a fresh one-thread process with a cold
disk cache of its own: once as the runner plays it (trials together) and once with the driver
switched off (one trial after another); which goes first alternates from shard to shard. Checks
that everything the shard stores except `wall_time` has the same digest, prints the CPU
seconds of both and their ratio per shard and in total, writes `results/bench_lockstep.csv`,
and exits with status 1 when any shard differs.

    .venv/bin/python benchmarks/bench_lockstep.py [EXPERIMENT ...] [--trials 5]
        [--algorithm SUBSTRING] [--config config/config.yaml]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from machine import RESULTS, machine_line

from dpbandits.config import experiment_shards, load_config
from dpbandits.policies import get_policy_class
from dpbandits.runner import lockstep_name

REPO = Path(__file__).resolve().parents[1]
GLM_EXPERIMENTS = ("glm_fig1_logistic", "glm_fig1_probit", "glm_table2", "glm_shuffle")
TIMED = """
import json, sys, time
sys.path.insert(0, sys.argv[3])
from bench_lockstep import digest
from dpbandits.instances.registry import build_instance
from dpbandits.policies import get_policy_class
from dpbandits.runner import lockstep_name
from dpbandits.simulate import run_shard
spec = json.loads(sys.argv[1])
cls = get_policy_class(spec["policy"])
if sys.argv[2] == "alone":
    cls.lockstep = ""
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


def lockstep_shards(config_path: Path, experiments: list[str], algorithm: str,
                    trials: int) -> list[dict[str, Any]]:
    """The shards (cut to `trials` trials, at least 2) whose algorithm has a lockstep driver."""
    config = load_config(config_path)
    specs = []
    for name in experiments:
        if name not in config["experiments"]:
            sys.exit(f"bench_lockstep: experiment = {name!r} is not allowed; allowed: "
                     + ", ".join(sorted(config["experiments"])))
        for shard in experiment_shards(name, config["experiments"][name]):
            spec = shard.spec
            if (lockstep_name(get_policy_class(spec["policy"])) and algorithm in spec["algorithm"]
                    and len(spec["trials"]) >= 2):
                specs.append({**spec, "trials": list(spec["trials"])[:trials]})
    return specs


def timed(spec: dict[str, Any], mode: str) -> dict[str, Any]:
    """CPU seconds and digest of one run of the shard in a fresh process with a cold cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "DPBANDITS_CACHE": cache, "OMP_NUM_THREADS": "1",
               "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        proc = subprocess.run([sys.executable, "-c", TIMED, json.dumps(spec), mode,
                               str(Path(__file__).parent)],
                              env=env, capture_output=True, text=True, cwd=REPO)
    if proc.returncode:
        sys.exit(f"bench_lockstep: {spec['algorithm']} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiments", nargs="*", default=list(GLM_EXPERIMENTS))
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--algorithm", default="", help="only algorithm labels containing this")
    parser.add_argument("--config", type=Path, default=REPO / "config" / "config.yaml")
    args = parser.parse_args()
    if args.trials < 2:
        sys.exit(f"bench_lockstep: --trials = {args.trials} is not allowed; must be >= 2")
    specs = lockstep_shards(args.config, args.experiments, args.algorithm, args.trials)
    if not specs:
        sys.exit("bench_lockstep: no shard of these experiments has a lockstep driver")
    print(machine_line())
    rows, differ = [], 0
    for k, spec in enumerate(specs):
        order = ("together", "alone") if k % 2 == 0 else ("alone", "together")
        runs = {mode: timed(spec, mode) for mode in order}
        same = runs["together"]["digest"] == runs["alone"]["digest"]
        differ += not same
        together, alone = runs["together"]["cpu"], runs["alone"]["cpu"]
        rows.append({"experiment": spec["experiment"], "algorithm": spec["algorithm"],
                     "epsilon": spec["epsilon"], "instance": spec["instance_index"],
                     "trials": len(spec["trials"]), "cpu_together": round(together, 3),
                     "cpu_alone": round(alone, 3), "same_bits": same})
        print(f"{'same' if same else 'DIFFERENT'}  {spec['experiment']} {spec['algorithm']} "
              f"eps={spec['epsilon']} inst={spec['instance_index']}: together {together:.2f} "
              f"CPU-s, one after another {alone:.2f} CPU-s, ×{alone / together:.2f}", flush=True)
    total_together = sum(r["cpu_together"] for r in rows)
    total_alone = sum(r["cpu_alone"] for r in rows)
    print(f"{len(rows)} shards, {differ} with different bits; together {total_together:.1f} "
          f"CPU-s, one after another {total_alone:.1f} CPU-s, ×{total_alone / total_together:.2f}")
    RESULTS.mkdir(exist_ok=True)
    with open(RESULTS / "bench_lockstep.csv", "w", newline="") as handle:
        handle.write(f"# {machine_line()}\n")
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
