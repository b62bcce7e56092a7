"""A change's speed-up on one shard: CPU seconds under a git revision and the working tree.

Runs the first shard of (experiment, algorithm[, ε]) of config/config.yaml, limited to
`--trials` trials, `--repeat` times under each source tree, alternating, each in a fresh
one-thread process that imports the policy's module and builds the instance untimed, with a
disk cache of its own per tree (so both trees start cold); prints every timing and
min(before) ÷ min(after). On a shared machine single timings vary by up to 2×; runs made side
by side see the same load, so their ratio holds where absolute seconds do not. The revision is
checked out into a temporary git worktree; its C extensions are copied from this tree when
their sources and setup.py are unchanged, else built there.

    .venv/bin/python benchmarks/bench_ab.py [REV [EXPERIMENT ALGORITHM]] [--epsilon E]
        [--trials 5] [--repeat 3]
"""

from __future__ import annotations

import argparse
import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from machine import machine_line

from dpbandits.config import experiment_shards, load_config

REPO = Path(__file__).resolve().parents[1]
C_SOURCES = ("setup.py", ":(glob)src/**/*.c", ":(glob)src/**/*.h")  # what the extensions build from
TIMED = """
import json, sys, time
from dpbandits.instances.registry import build_instance
from dpbandits.policies import get_policy_class
from dpbandits.simulate import run_shard
spec = json.loads(sys.argv[1])
get_policy_class(spec["policy"])
start = time.process_time(); build_instance(dict(spec["instance"]))
build = time.process_time() - start
start = time.process_time(); run_shard(spec)
print(time.process_time() - start - build)
"""


def shard_spec(experiment: str, algorithm: str, epsilon: float | None,
               trials: int) -> dict[str, object]:
    """The first shard of the entry, cut to `trials` trials; one clear error if there is none."""
    config = load_config(REPO / "config" / "config.yaml")
    if experiment not in config["experiments"]:
        sys.exit(f"bench_ab: experiment = {experiment!r} is not allowed; allowed: "
                 + ", ".join(sorted(config["experiments"])))
    for shard in experiment_shards(experiment, config["experiments"][experiment]):
        spec = shard.spec
        if spec["algorithm"] == algorithm and (epsilon is None or spec["epsilon"] == epsilon):
            return {**spec, "trials": list(spec["trials"])[:trials]}
    sys.exit(f"bench_ab: no shard of {experiment} has algorithm = {algorithm!r} and epsilon = "
             f"{epsilon!r}")


def checkout(rev: str, where: Path) -> Path:
    """`rev` as a worktree at `where`, with built C extensions; returns its src folder."""
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-f", str(where),
                    rev], check=True, capture_output=True)
    untracked = subprocess.run(["git", "-C", str(REPO), "ls-files", "--others",
                                "--exclude-standard", "--", *C_SOURCES],
                               check=True, capture_output=True, text=True).stdout.strip()
    same = not untracked and subprocess.run(["git", "-C", str(REPO), "diff", "--quiet", rev,
                                             "--", *C_SOURCES]).returncode == 0
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]  # this interpreter's build
    built = sorted((REPO / "src").rglob(f"*{suffix}"))
    if same and built:
        for path in built:
            shutil.copy2(path, where / path.relative_to(REPO))
    else:
        subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=where,
                       check=True, capture_output=True)
    return where / "src"


def cpu_seconds(src: Path, spec: dict[str, object], cache: Path) -> float:
    """One timed run of the shard with `src` first on the path, on one BLAS thread."""
    env = {**os.environ, "PYTHONPATH": str(src), "DPBANDITS_CACHE": str(cache),
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", TIMED, json.dumps(spec)], env=env,
                         capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"bench_ab: the run under {src} failed:\n{out.stderr[-2000:]}")
    return float(out.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", nargs="?", default="HEAD",
                        help="git revision to compare against (default HEAD: the uncommitted "
                             "change)")
    parser.add_argument("experiment", nargs="?", default="glm_table2")
    parser.add_argument("algorithm", nargs="?", default="Private-GLM (strict)",
                        help="algorithm label (default 'Private-GLM (strict)')")
    parser.add_argument("--epsilon", type=float, default=None)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spec = shard_spec(args.experiment, args.algorithm, args.epsilon, args.trials)
    print(machine_line(), flush=True)
    with tempfile.TemporaryDirectory(prefix="dpb-ab-") as tmp:
        worktree = Path(tmp) / "before"
        try:
            trees = {args.rev: checkout(args.rev, worktree), "working tree": REPO / "src"}
            times: dict[str, list[float]] = {name: [] for name in trees}
            for _ in range(args.repeat):
                for k, (name, src) in enumerate(trees.items()):
                    times[name].append(cpu_seconds(src, spec, Path(tmp) / f"cache{k}"))
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                            str(worktree)], capture_output=True)
            subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], capture_output=True)
    for name, values in times.items():
        print(f"{name:>14}: " + " ".join(f"{v:.2f}" for v in values) + " CPU-s")
    before, after = (min(v) for v in times.values())
    print(f"{args.experiment} {args.algorithm} ({len(spec['trials'])} trials): "  # type: ignore[arg-type]
          f"{args.rev} ÷ working tree = {before / after:.2f}")


if __name__ == "__main__":
    main()
