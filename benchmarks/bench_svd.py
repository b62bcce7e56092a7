"""Parse + CSR + rank-50 SVD of a synthetic rating file with ML-25M's shape and density.

Usage: `nice -n 10 .venv/bin/python benchmarks/bench_svd.py [--csv PATH] [--k 50]`.
Writes (once) a `ratings.csv` in the ml-25m layout: 162,541 users, 62,423 movies, 25,000,095
distinct (user, movie) ratings with skewed activity/popularity, rows sorted by user then movie.
The measured part runs in a fresh process so that its peak RSS is its own: read_csv + id
factorisation + time sort (`parse`), ratings.h5 write/read, centred CSR (`matrix`) and ARPACK
`svds` in float32 (`svd`). Target (issue 6): ≤ 3 min and ≤ 4 GB on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

N_USERS, N_ITEMS, N_RATINGS = 162_541, 62_423, 25_000_095


def make_csv(path: Path, seed: int = 0) -> None:
    """Synthetic ratings.csv: Zipf-like user activity and movie popularity, half stars."""
    rng = np.random.default_rng(seed)
    activity = np.minimum(rng.pareto(1.5, N_USERS) + 1.0, 200.0)
    popularity = 1.0 / (np.arange(N_ITEMS) + 200.0) ** 0.9
    n = int(1.25 * N_RATINGS)
    keys = rng.choice(N_USERS, n, p=activity / activity.sum()).astype(np.int64) * N_ITEMS
    keys += rng.choice(N_ITEMS, n, p=popularity / popularity.sum())
    keys = np.unique(keys)
    while len(keys) < N_RATINGS:  # top up with uniform pairs (rarely repeated)
        extra = rng.integers(0, N_USERS * N_ITEMS, int(1.1 * (N_RATINGS - len(keys))) + 10)
        keys = np.unique(np.concatenate([keys, extra]))
    keys = np.sort(rng.choice(keys, N_RATINGS, replace=False))
    users, items = np.divmod(keys, N_ITEMS)
    del keys
    stars = np.clip(np.round(rng.normal(3.5, 1.0, N_RATINGS) * 2) / 2, 0.5, 5.0)
    stamps = rng.integers(789_652_009, 1_574_327_703, N_RATINGS)
    frame = pd.DataFrame({"userId": (users + 1).astype(np.int32),
                          "movieId": (3 * items + 1).astype(np.int32),
                          "rating": stars.astype(np.float32), "timestamp": stamps})
    frame.to_csv(path, index=False, float_format="%.1f", chunksize=1_000_000)


def cpu_seconds() -> float:
    """User + system CPU time of this process so far (independent of other load)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(csv: Path, k: int) -> None:
    """The timed part (run in its own process); wall and CPU seconds per step."""
    from dpbandits.data.movielens import read_ratings_csv
    from dpbandits.data.ratings import build_log, read_log, write_log
    from dpbandits.data.svd import centered_matrix, peak_rss_mb, truncated_svd

    times = {}
    start, cpu_start = time.perf_counter(), cpu_seconds()
    t0, c0 = start, cpu_start

    def lap(name: str) -> None:
        nonlocal t0, c0
        t1, c1 = time.perf_counter(), cpu_seconds()
        times[name] = (t1 - t0, c1 - c0)
        t0, c0 = t1, c1

    log = build_log("synthetic-ml-25m", read_ratings_csv(csv))
    lap("parse (read_csv + factorise + dedupe + time sort)")
    with tempfile.TemporaryDirectory(dir=csv.parent) as tmp:
        write_log(Path(tmp) / "ratings.h5", log)
        del log
        log = read_log(Path(tmp) / "ratings.h5")
    lap("ratings.h5 write + read")
    matrix, _, _ = centered_matrix(log, "global")
    shape, nnz = matrix.shape, matrix.nnz
    del log
    lap("centred CSR (float32)")
    _, s, _ = truncated_svd(matrix, k)
    lap(f"svds k={k} (ARPACK, float32)")
    total, cpu = time.perf_counter() - start, cpu_seconds() - cpu_start
    print(f"matrix {shape[0]} x {shape[1]}, {nnz} ratings; s1 = {s[0]:.1f}, s{k} = {s[-1]:.1f}")
    print(f"  {'step':<52s} {'wall':>7s}   {'cpu':>7s}")
    for name, (wall, cpu_s) in times.items():
        print(f"  {name:<52s} {wall:7.1f} s {cpu_s:7.1f} s")
    print(f"  {'total':<52s} {total:7.1f} s {cpu:7.1f} s  (target <= 180 s wall)")
    print(f"  load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"  {'peak RSS':<52s} {peak_rss_mb() / 1024:7.2f} GB (target <= 4 GB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=Path(tempfile.gettempdir()) /
                        "dpbandits-bench" / "ratings.csv")
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args.csv, args.k)
        return
    if not args.csv.is_file():
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        make_csv(args.csv)
        print(f"wrote {args.csv} ({args.csv.stat().st_size / 1e6:.0f} MB) in "
              f"{time.perf_counter() - t0:.0f} s (not timed below)")
    subprocess.run([sys.executable, __file__, "--measure", "--csv", str(args.csv),
                    "--k", str(args.k)], check=True)


if __name__ == "__main__":
    main()
