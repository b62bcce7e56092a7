"""Seconds per run of the non-private GLM baselines and the growth of run time with T.

Runs each baseline once per horizon T ∈ {1250, 2500, 5000} (d = 3, K = 20, S = 2, instance seed
109832; probit, and logistic for ECOLog) on one thread, prints wall and CPU seconds per run and
the exponent of a log-log fit of CPU time against T, and writes
benchmarks/results/glm_baselines.csv.

Usage: python benchmarks/bench_glm_baselines.py [--with-compat-glm-ucb] [--horizons 1250 2500 5000]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import csv  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from dpbandits.instances.glm import GLMInstance  # noqa: E402
from dpbandits.policies import make_policy  # noqa: E402
from dpbandits.seeding import policy_rng  # noqa: E402

SEED = 109832
BASELINES = [
    ("GLM-UCB", "probit", {}),
    ("GLOC", "probit", {}),
    ("ECOLog", "logistic", {}),
    ("RS-GLinUCB", "probit", {"variant": "T2"}),
    ("RS-GLinUCB", "probit", {"variant": "C"}),
]
COMPAT_GLM_UCB = ("GLM-UCB", "probit", {"solver": "compat"})
OUT = Path(__file__).resolve().parent / "results" / "glm_baselines.csv"


def label(name: str, params: dict) -> str:
    extra = ",".join(f"{k}={v}" for k, v in params.items())
    return f"{name} ({extra})" if extra else name


def time_run(name: str, family: str, params: dict, horizon: int) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, final cumulative regret) of one run of trial 0."""
    inst = GLMInstance(family, 3, 20, 2.0, horizon, SEED)
    env = inst.environment(0)
    policy = make_policy(name, inst.info, policy_rng(SEED, 0, label(name, params), None),
                         delta=0.02, **params)
    wall, cpu = time.perf_counter(), time.process_time()
    result = policy.run(env)
    return time.perf_counter() - wall, time.process_time() - cpu, float(result.regret.sum())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizons", type=int, nargs="+", default=[1250, 2500, 5000])
    parser.add_argument("--with-compat-glm-ucb", action="store_true",
                        help="also time GLM-UCB with the L-BFGS-B solver (about a minute a run)")
    args = parser.parse_args()
    runs = BASELINES + ([COMPAT_GLM_UCB] if args.with_compat_glm_ucb else [])
    rows = []
    print(f"{'baseline':34s} {'family':8s} " + " ".join(f"{'T=' + str(T):>16s}" for T in
                                                     args.horizons) + "  exponent")
    for name, family, params in runs:
        times = []
        for horizon in args.horizons:
            wall, cpu, regret = time_run(name, family, params, horizon)
            times.append(cpu)
            rows.append({"baseline": label(name, params), "family": family, "d": 3, "K": 20,
                         "T": horizon, "wall_seconds": round(wall, 4),
                         "cpu_seconds": round(cpu, 4), "final_regret": round(regret, 3)})
        slope = float(np.polyfit(np.log(args.horizons), np.log(times), 1)[0])
        for row in rows[-len(args.horizons):]:
            row["time_exponent"] = round(slope, 3)
        cells = " ".join(f"{row['cpu_seconds']:7.2f}s ({row['wall_seconds']:5.1f})"
                         for row in rows[-len(args.horizons):])
        print(f"{label(name, params):34s} {family:8s} {cells}  {slope:6.2f}", flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"CPU seconds per run (wall in parentheses); wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
