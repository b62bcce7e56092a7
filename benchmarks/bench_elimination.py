"""Speed of the batched-elimination policies: one run per algorithm at T = 10^4 … 10^6.

Prints the median CPU and wall time of `policy.run(env)` per (algorithm, T), the fitted scaling
exponent b of CPU time ≈ a·T^b per algorithm, and writes benchmarks/results/bench_elimination.csv.
CPU (process) time is what one run costs on one core even when the machine is shared.
Target: one run at T = 10^6 ≤ 2 s on one core.
"""

from __future__ import annotations

import csv
import statistics
import time
from pathlib import Path

import numpy as np

from dpbandits.instances.registry import build_instance
from dpbandits.policies import make_policy

ALGORITHMS = [
    ("PhasedElimination", None, {}),
    ("CentralDPElimination", 1.0, {}),
    ("LocalDPElimination", 1.0, {}),
    ("ShuffleDPElimination", 1.0, {}),
    ("ShuffleDPElimination", 1.0, {"path": "explicit"}),
]
HORIZONS = [10**4, 10**5, 10**6]
REPEATS = 7
OUT = Path(__file__).parent / "results" / "bench_elimination.csv"


def time_run(
    name: str, eps: float | None, params: dict, horizon: int, trial: int
) -> tuple[float, float]:
    inst = build_instance(
        {
            "generator": "linear_sphere",
            "K": 10,
            "d": 2,
            "horizon": horizon,
            "seed": 1,
            "redraw": True,
        }
    )
    env = inst.environment(trial)
    policy = make_policy(
        name,
        inst.info,
        np.random.default_rng(trial),
        epsilon=eps,
        delta=1e-6 if eps else None,
        accounting="paper",
        **params,
    )
    start, cpu = time.perf_counter(), time.process_time()
    result = policy.run(env)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert result.regret.shape == (horizon,)
    return cpu, elapsed


def main() -> None:
    time_run("ShuffleDPElimination", 1.0, {}, 10**4, 0)  # imports and caches
    rows = []
    for name, eps, params in ALGORITHMS:
        label = name + (f" [{params['path']}]" if params else "")
        times = []
        for horizon in HORIZONS:
            runs = [time_run(name, eps, params, horizon, r) for r in range(REPEATS)]
            t = statistics.median(r[0] for r in runs)
            wall = statistics.median(r[1] for r in runs)
            times.append(t)
            rows.append(
                {
                    "algorithm": label,
                    "horizon": horizon,
                    "median_cpu_seconds": t,
                    "median_wall_seconds": wall,
                }
            )
            print(
                f"{label:36s} T={horizon:>8d}  cpu {t * 1000:8.1f} ms  wall {wall * 1000:8.1f} ms",
                flush=True,
            )
        slope = np.polyfit(np.log(HORIZONS), np.log(times), 1)[0]
        print(
            f"{label:36s} scaling exponent b = {slope:.2f}  "
            f"(T=1e6: {times[-1]:.3f}s, target <= 2 s)"
        )
        for row in rows[-len(HORIZONS) :]:
            row["exponent"] = slope
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
