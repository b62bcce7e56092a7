"""Speed of the exact discrete samplers (ExactNoise, CKS 2020 Alg. 1–3 in C) against numpy.

Draws per second of `ExactNoise.gaussian` / `.laplace` and of `rng.normal` / `rng.laplace` for
10^4 … 10^6 draws per call, with the ratio exact/numpy (of draws per second: 0.25 means four
times slower) and the CPU model from /proc/cpuinfo. CPU (process) time is measured: the median
over 5 batches, each at least 0.2 s of calls. Writes benchmarks/results/bench_exact_noise.csv.

    .venv/bin/python benchmarks/bench_exact_noise.py [--sizes 10000 100000 1000000]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from machine import cpu_model

from dpbandits.privacy.exact_noise import ExactNoise

SIGMA, SCALE = 1.7, 0.9  # any float: ExactNoise draws integers of σ_Z ∈ [2^20, 2^21)
BATCHES, MIN_BATCH_SECONDS = 5, 0.2
OUT = Path(__file__).parent / "results" / "bench_exact_noise.csv"



def draws_per_second(draw: Callable[[int], object], size: int) -> float:
    """Median over BATCHES of (draws / CPU seconds), each batch ≥ MIN_BATCH_SECONDS."""
    draw(size)  # warm up
    rates = []
    for _ in range(BATCHES):
        calls, start = 0, time.process_time()
        while (elapsed := time.process_time() - start) < MIN_BATCH_SECONDS or calls == 0:
            draw(size)
            calls += 1
        rates.append(calls * size / elapsed)
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**4, 10**5, 10**6])
    args = parser.parse_args()
    cpu = cpu_model()
    exact, rng = ExactNoise(np.random.default_rng(1)), np.random.default_rng(1)
    kinds = {
        "gaussian": (lambda n: exact.gaussian(SIGMA, n), lambda n: rng.normal(0.0, SIGMA, n)),
        "laplace": (lambda n: exact.laplace(SCALE, n), lambda n: rng.laplace(0.0, SCALE, n)),
    }
    print(f"CPU: {cpu}; numpy {np.__version__}; CPU time, median of {BATCHES} batches")
    print(f"{'noise':9s} {'size':>9s} {'exact draws/s':>15s} {'numpy draws/s':>15s} "
          f"{'exact/numpy':>12s}")
    rows = []
    for kind, (exact_draw, numpy_draw) in kinds.items():
        for size in args.sizes:
            fast = draws_per_second(exact_draw, size)
            ref = draws_per_second(numpy_draw, size)
            print(f"{kind:9s} {size:9d} {fast:15.3e} {ref:15.3e} {fast / ref:12.3f}", flush=True)
            rows.append({"cpu": cpu, "noise": kind, "size": size,
                         "exact_draws_per_s": round(fast), "numpy_draws_per_s": round(ref),
                         "ratio_exact_over_numpy": round(fast / ref, 4)})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
