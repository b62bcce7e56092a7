"""CPU seconds per run of every algorithm of the paper-scale sweep, and the sweep's compute.

For each synthetic experiment of config/config.yaml and each (algorithm, ε) of it, runs one
trial of its first shard (all of that shard's trials when one takes under 0.5 CPU-s) through
`dpbandits.simulate.run_shard` on one thread and records the least CPU seconds per trial of
`--repeat` runs (on a shared machine single timings vary by up to 2×); the instance is built
once per experiment and timed on its own. The estimated compute of the
experiment is Σ runs × seconds per run + shards × instance build. Prints the CPU model next to
the figures and writes benchmarks/results/bench_sweep.csv.

`--compare FILE` (benchmarks/baseline/bench_sweep.csv is the committed baseline, recorded on the
machine named in it) prints each row's ratio new/old and exits 1 if any algorithm got more than
`--tolerance` times slower. `--one-epsilon` times one ε per algorithm (the middle one) and uses
it for all.

    .venv/bin/python benchmarks/bench_sweep.py [--experiments glm_table2 ...] [--compare FILE]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import csv  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

from machine import RESULTS, cpu_model, machine_line, write_rows  # noqa: E402

from dpbandits.config import experiment_shards, load_config  # noqa: E402
from dpbandits.instances.registry import build_instance  # noqa: E402
from dpbandits.simulate import run_shard  # noqa: E402

CONFIG = Path(__file__).parents[1] / "config" / "config.yaml"
OUT = RESULTS / "bench_sweep.csv"
MIN_TIMED_CPU = 0.5  # seconds: shorter timings are dominated by the timer and the load


def cpu_seconds(work: object, *args: object) -> float:
    """CPU seconds of one call."""
    start = time.process_time()
    work(*args)  # type: ignore[operator]
    return time.process_time() - start


def cpu_per_run(spec: dict, build: float, repeat: int) -> float:
    """CPU seconds of one trial: the least of `repeat` timings of its shard's first trial
    (instance build taken off), or of all its trials when one takes under MIN_TIMED_CPU."""
    for count in (1, len(spec["trials"])):
        trials = {**spec, "trials": spec["trials"][:count]}
        total = min(cpu_seconds(run_shard, trials) for _ in range(repeat)) - build
        if total >= MIN_TIMED_CPU:
            break
    return max(total, 0.0) / count


def measure(name: str, exp: dict, one_epsilon: bool, repeat: int) -> list[dict[str, object]]:
    """Rows (algorithm, ε, runs, CPU s per run: the least of `repeat` timings) of one
    experiment, plus its instance builds."""
    shards = experiment_shards(name, exp)
    runs: dict[tuple[str, object], int] = defaultdict(int)
    first: dict[tuple[str, object], dict] = {}
    for shard in shards:
        key = (shard.spec["algorithm"], shard.spec.get("epsilon"))
        runs[key] += len(shard.spec["trials"])
        first.setdefault(key, shard.spec)
    build = min(cpu_seconds(build_instance, dict(shards[0].spec["instance"]))
                for _ in range(repeat))
    rows = [{"experiment": name, "algorithm": "(instance build)", "epsilon": "",
             "runs": len(shards), "cpu_s_per_run": round(build, 4),
             "cpu_s_total": round(build * len(shards), 2)}]
    timed: dict[str, float] = {}
    for (algorithm, epsilon), spec in first.items():
        epsilons = [e for a, e in first if a == algorithm]
        if one_epsilon and algorithm in timed:
            per_run = timed[algorithm]
        elif one_epsilon and epsilon != epsilons[len(epsilons) // 2]:
            continue
        else:
            per_run = cpu_per_run(spec, build, repeat)
            timed[algorithm] = per_run
        rows.append({"experiment": name, "algorithm": algorithm,
                     "epsilon": "" if epsilon is None else epsilon,
                     "runs": runs[(algorithm, epsilon)], "cpu_s_per_run": round(per_run, 4),
                     "cpu_s_total": round(per_run * runs[(algorithm, epsilon)], 2)})
    if one_epsilon:  # fill in the ε values skipped above with their algorithm's time
        done = {(r["algorithm"], r["epsilon"]) for r in rows}
        for (algorithm, epsilon), count in runs.items():
            eps = "" if epsilon is None else epsilon
            if (algorithm, eps) not in done and algorithm in timed:
                rows.append({"experiment": name, "algorithm": algorithm, "epsilon": eps,
                             "runs": count, "cpu_s_per_run": round(timed[algorithm], 4),
                             "cpu_s_total": round(timed[algorithm] * count, 2)})
    return rows


def compare(rows: list[dict[str, object]], baseline: Path, tolerance: float) -> bool:
    """Print new/old per row of both files; True when no row is `tolerance` times slower."""
    with open(baseline, newline="") as handle:
        old = {(r["experiment"], r["algorithm"], r["epsilon"]): r for r in csv.DictReader(handle)}
    print(f"\nagainst {baseline} (recorded on: {next(iter(old.values()))['cpu']})")
    ok = True
    for row in rows:
        before = old.get((row["experiment"], row["algorithm"], str(row["epsilon"])))
        if before is None or float(before["cpu_s_per_run"]) <= 0.01:
            continue
        ratio = float(row["cpu_s_per_run"]) / float(before["cpu_s_per_run"])
        slower = ratio > tolerance
        ok &= not slower
        print(f"  {row['experiment']:18s} {str(row['algorithm'])[:40]:40s} "
              f"{str(row['epsilon']):>6s} {ratio:6.2f}{'  SLOWER' if slower else ''}")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", nargs="+")
    parser.add_argument("--one-epsilon", action="store_true")
    parser.add_argument("--compare", type=Path)
    parser.add_argument("--tolerance", type=float, default=1.5)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--repeat", type=int, default=3,
                        help="time each row this many times and keep the least (load noise)")
    args = parser.parse_args()
    config = load_config(CONFIG)
    names = [n for n, e in config["experiments"].items() if e["group"] == "synthetic"
             and (not args.experiments or n in args.experiments)]
    cpu = cpu_model()
    print(machine_line())
    rows: list[dict[str, object]] = []
    for name in names:
        measured = measure(name, config["experiments"][name], args.one_epsilon, args.repeat)
        total = sum(float(r["cpu_s_total"]) for r in measured)
        print(f"{name:18s} {total / 60:7.2f} CPU-min  ({len(measured) - 1} algorithm × ε rows)",
              flush=True)
        rows.extend({"cpu": cpu, **r} for r in measured)
    print(f"{'sweep':18s} {sum(float(r['cpu_s_total']) for r in rows) / 60:7.2f} CPU-min")
    write_rows(args.out, rows)
    if args.compare and not compare(rows, args.compare, args.tolerance):
        sys.exit(1)


if __name__ == "__main__":
    main()
