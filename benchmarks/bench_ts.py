"""Speed of the AdaPrivate-TS family and its baselines: one run at T = 10,000, d = 20, 5 arms.

Prints, per policy, the median CPU (process) seconds of one trial as a shard runs it (the
pool environment built, the policy constructed, `run_policy`) on one BLAS thread, with the CPU
model, and writes benchmarks/results/bench_ts.csv. CPU time is what one run costs on one core
even when the machine is shared; absolute seconds still depend on the machine and its load, so
the ratios below, measured in one run, travel better:

- `--against SRC`: the same timings for another source tree (e.g. a `git worktree` of an earlier
  commit; SRC holds `src/dpbandits`), run in alternation with this tree, and the ratio of its
  CPU seconds to ours per policy and for the sweep.
- `--compare FILE`: CPU seconds of an earlier bench_ts.csv divided by this run's.

The sweep estimate sums, over the shards of the TS synthetic experiments of a config, trials ×
the median CPU seconds of the matching policy (zCDP-Episodic with c_trigger = 1 apart).

    .venv/bin/python benchmarks/bench_ts.py [--repeats 3] [--config config/config.yaml]
        [--against SRC] [--compare OLD.csv]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import csv  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from machine import cpu_model  # noqa: E402

INSTANCE = {"generator": "logistic_pool", "d": 20, "n_arms": 100, "K": 5, "S": 2.0,
            "horizon": 10_000, "seed": 318723}
POLICIES: list[tuple[str, dict]] = [
    ("LinUCB", {}), ("LinTS", {}), ("AdaPrivate-TS", {}),
    ("AdaPrivate-TS-Amp", {"accounting": "paper"}), ("AdaPrivate-TS-Adaptive", {}),
    ("AdaPrivate-UCB", {}), ("JDP-LinUCB", {}), ("zCDP-Episodic", {}),
    ("zCDP-Episodic", {"c_trigger": 1}), ("AdaC-OFUL-zCDP", {}),
    ("RarelySwitching-zCDP", {}), ("DGS-LinUCB", {}),
]
EXPERIMENTS = ("ts_synthetic", "ts_linear", "ts_amplification", "ts_ablation", "ts_robustness",
               "ts_group_privacy", "ts_mean_gram")
OUT = Path(__file__).parent / "results" / "bench_ts.csv"



def label_of(name: str, extra: dict) -> str:
    return name + "".join(f" {k}={v}" for k, v in extra.items() if k != "accounting")


def time_policy(name: str, extra: dict, repeats: int) -> float:
    """Median CPU seconds of one trial (environment, policy, run) over `repeats` trials."""
    from dpbandits.instances.registry import build_instance
    from dpbandits.policies import get_policy_class
    from dpbandits.runner import run_policy

    inst = build_instance(dict(INSTANCE))
    cls = get_policy_class(name)
    cpu = []
    for trial in range(repeats):
        kwargs = dict(extra)
        accounting = kwargs.pop("accounting", "strict")
        if cls.private:
            kwargs.update(epsilon=1.0, delta=1e-5, accounting=accounting)
        start = time.process_time()
        env = inst.environment(trial)
        run_policy(cls(inst.info, np.random.default_rng(trial), **kwargs), env)
        cpu.append(time.process_time() - start)
    return statistics.median(cpu)


def measure(repeats: int) -> dict[str, float]:
    """Median CPU seconds per policy label, in the order of POLICIES."""
    return {label_of(name, extra): time_policy(name, extra, repeats) for name, extra in POLICIES}


def measure_elsewhere(src: Path, repeats: int) -> dict[str, float]:
    """`measure` run by the tree at `src` (its src/ first on the path), in a subprocess."""
    env = dict(os.environ, PYTHONPATH=str(src / "src"))
    out = subprocess.run([sys.executable, __file__, "--json", "--repeats", str(repeats)],
                         env=env, capture_output=True, text=True, check=True, cwd=src)
    return json.loads(out.stdout.strip().splitlines()[-1])


def sweep_estimate(config_path: str, cost: dict[str, float]) -> float:
    """CPU seconds of the TS synthetic experiments = Σ shards trials × median CPU of the policy."""
    from dpbandits.config import experiment_shards, load_config

    config = load_config(config_path)
    total = 0.0
    for experiment in EXPERIMENTS:
        exp = config["experiments"].get(experiment)
        if exp is None:
            continue
        for shard in experiment_shards(experiment, exp):
            spec = shard.spec
            key = spec["policy"] + (" c_trigger=1" if spec["params"].get("c_trigger") == 1
                                    else "")
            total += len(spec["trials"]) * cost.get(key, cost.get(spec["policy"], 0.0))
    return total


def compare(old: Path, cost: dict[str, float]) -> None:
    """Earlier CSV's CPU seconds ÷ this run's, per policy."""
    with open(old, newline="") as handle:
        before = {row["policy"]: float(row["cpu_s"]) for row in csv.DictReader(handle)}
    print(f"\nCPU seconds of {old} ÷ this run's:")
    for label, cpu in cost.items():
        if label in before:
            print(f"  {label:34s} {before[label] / cpu:5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--against", type=Path, help="another source tree to time alternately")
    parser.add_argument("--compare", type=Path, help="an earlier bench_ts.csv")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.repeats)))
        return
    cpu = cpu_model()
    print(f"CPU: {cpu}; one BLAS thread; median CPU s of one trial over {args.repeats} trials")
    ours: dict[str, list[float]] = {}
    theirs: dict[str, list[float]] = {}
    rounds = 2 if args.against is not None else 1
    for _ in range(rounds):  # alternate, so both trees see the same load
        if args.against is not None:
            for label, value in measure_elsewhere(args.against, args.repeats).items():
                theirs.setdefault(label, []).append(value)
        for label, value in measure(args.repeats).items():
            ours.setdefault(label, []).append(value)
    cost = {label: min(values) for label, values in ours.items()}
    other = {label: min(values) for label, values in theirs.items()}
    header = f"{'policy':34s} {'cpu s':>7s}"
    print(header + (f" {'against':>8s} {'ratio':>6s}" if other else ""))
    rows = []
    for label, value in cost.items():
        line = f"{label:34s} {value:7.3f}"
        if label in other:
            line += f" {other[label]:8.3f} {other[label] / value:6.2f}"
        print(line)
        rows.append({"policy": label, "T": INSTANCE["horizon"], "d": INSTANCE["d"],
                     "K": INSTANCE["K"], "cpu_s": round(value, 4), "cpu_model": cpu})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {OUT}")
    if Path(args.config).exists():
        total = sweep_estimate(args.config, cost)
        line = f"TS synthetic experiments: ≈ {total / 60:.1f} CPU-minutes of simulation"
        if other:
            before = sweep_estimate(args.config, other)
            line += f" (against: {before / 60:.1f}, ratio {before / total:.2f})"
        print(line)
    if args.compare is not None:
        compare(args.compare, cost)


if __name__ == "__main__":
    main()
