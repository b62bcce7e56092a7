"""Speed of the AdaPrivate-TS family and its baselines: one run at T = 10,000, d = 20, 5 arms.

Prints the median CPU (process) and wall time of `policy.run(env)` over a few trials per policy,
then estimates the compute of the `ts_synthetic` sweep of a config (every algorithm × ε × trial,
from those medians) and writes benchmarks/results/bench_ts.csv. CPU time is what one run costs
on one core even when the machine is shared. Target: ≤ 1 s for LinUCB, LinTS, AdaPrivate-*.

    .venv/bin/python benchmarks/bench_ts.py [--repeats 3] [--config config/config.yaml]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import time
from pathlib import Path

import numpy as np

from dpbandits.config import expand_algorithms, load_config
from dpbandits.instances.registry import build_instance
from dpbandits.policies import get_policy_class, make_policy

INSTANCE = {"generator": "logistic_pool", "d": 20, "n_arms": 100, "K": 5, "S": 2.0,
            "horizon": 10_000, "seed": 318723}
POLICIES = [
    ("LinUCB", {}, True), ("LinTS", {}, True), ("AdaPrivate-TS", {}, True),
    ("AdaPrivate-TS-Amp", {"accounting": "paper"}, True), ("AdaPrivate-TS-Adaptive", {}, True),
    ("AdaPrivate-UCB", {}, True), ("JDP-LinUCB", {}, False), ("zCDP-Episodic", {}, False),
    ("zCDP-Episodic", {"c_trigger": 1}, False), ("AdaC-OFUL-zCDP", {}, False),
    ("RarelySwitching-zCDP", {}, False), ("DGS-LinUCB", {}, False),
]
TARGET_SECONDS = 1.0
OUT = Path(__file__).parent / "results" / "bench_ts.csv"


def time_policy(name: str, extra: dict, repeats: int) -> tuple[float, float]:
    """Median (CPU, wall) seconds of one run over `repeats` trials."""
    inst = build_instance(dict(INSTANCE))
    cls = get_policy_class(name)
    cpu, wall = [], []
    for trial in range(repeats):
        env = inst.environment(trial)
        kwargs = dict(extra)
        accounting = kwargs.pop("accounting", "strict")
        if cls.private:
            kwargs.update(epsilon=1.0, delta=1e-5, accounting=accounting)
        policy = make_policy(name, inst.info, np.random.default_rng(trial), **kwargs)
        c0, w0 = time.process_time(), time.perf_counter()
        policy.run(env)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu), statistics.median(wall)


def sweep_estimate(config_path: str, experiment: str, cost: dict[str, float]) -> None:
    """Compute of an experiment = Σ over shards of trials × median CPU of its policy."""
    config = load_config(config_path)
    exp = config["experiments"].get(experiment)
    if exp is None:
        print(f"{experiment}: not in {config_path}")
        return
    total, runs, shards = 0.0, 0, 0
    for alg in expand_algorithms(exp["algorithms"]):
        name = alg["policy"]
        key = name + (" c_trigger=1" if alg["params"].get("c_trigger") == 1 else "")
        per_run = cost.get(key, cost.get(name, 0.0))
        n_eps = len(exp["epsilons"]) if get_policy_class(name).private else 1
        blocks = -(-exp["trials"] // exp.get("trials_per_shard", 1))
        shards += n_eps * blocks
        runs += n_eps * exp["trials"]
        total += n_eps * exp["trials"] * per_run
    print(f"{experiment}: {shards} shards, {runs} runs, ≈ {total:.0f} core-seconds of "
          f"simulation ({total / 2 / 60:.1f} min on 2 cores, before per-job start-up)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--experiment", default="ts_synthetic")
    args = parser.parse_args()
    rows, cost = [], {}
    print(f"{'policy':34s} {'cpu s':>7s} {'wall s':>7s}  target")
    for name, extra, targeted in POLICIES:
        cpu, wall = time_policy(name, extra, args.repeats)
        label = name + "".join(f" {k}={v}" for k, v in extra.items() if k != "accounting")
        cost[label] = cpu
        ok = ("ok" if cpu <= TARGET_SECONDS else "SLOW") if targeted else "-"
        print(f"{label:34s} {cpu:7.3f} {wall:7.3f}  {ok}")
        rows.append({"policy": label, "T": INSTANCE["horizon"], "d": INSTANCE["d"],
                     "K": INSTANCE["K"], "cpu_s": round(cpu, 4), "wall_s": round(wall, 4),
                     "target_s": TARGET_SECONDS if targeted else ""})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {OUT}")
    if Path(args.config).exists():
        sweep_estimate(args.config, args.experiment, cost)


if __name__ == "__main__":
    main()
