"""Run the whole `linear_fig2` sweep in one process through the library and time it.

Usage: python benchmarks/sweep_linear_fig2.py [config.yaml] [out_dir]
Writes shards, summary.csv, curves.h5 and the experiment's figures/tables under out_dir, prints
the wall and CPU time per shard and in total (CPU time is the one-core cost even on a shared
machine), and the claims table.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from dpbandits.aggregate import aggregate, load_curves
from dpbandits.config import experiment_shards, load_config
from dpbandits.outputs import make_outputs
from dpbandits.paper.published import load_published
from dpbandits.simulate import run_shard
from dpbandits.storage import write_shard

PUBLISHED = Path(__file__).resolve().parents[1] / "paper" / "published"

EXPERIMENT = "linear_fig2"


def main() -> None:
    config_path = sys.argv[1] if len(sys.argv) > 1 else "config/config.yaml"
    out = Path(sys.argv[2] if len(sys.argv) > 2 else "/tmp/linear_fig2_sweep")
    exp = load_config(config_path)["experiments"][EXPERIMENT]
    shards = experiment_shards(EXPERIMENT, exp)
    start, cpu_start = time.perf_counter(), time.process_time()
    paths = []
    for shard in shards:
        t0, c0 = time.perf_counter(), time.process_time()
        path = out / "results" / shard.path
        write_shard(path, run_shard(shard.spec))
        paths.append(path)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        print(f"wall {wall:6.2f}s  cpu {cpu:6.2f}s  {shard.path}", flush=True)
    simulate, simulate_cpu = time.perf_counter() - start, time.process_time() - cpu_start
    results = out / "results" / EXPERIMENT
    summary = aggregate(paths, results / "summary.csv", results / "curves.h5")
    written = make_outputs(
        EXPERIMENT, exp, summary, load_curves(results / "curves.h5"), out / "paper",
        load_published(PUBLISHED.glob("*.yaml")),
    )
    total, total_cpu = time.perf_counter() - start, time.process_time() - cpu_start
    print(
        f"{len(shards)} shards simulated in {simulate:.1f}s wall / {simulate_cpu:.1f}s cpu; "
        f"total with outputs {total:.1f}s wall / {total_cpu:.1f}s cpu"
    )
    for path in written:
        print("wrote", path)
    claims = out / "paper" / "tables" / f"{EXPERIMENT}_claims.md"
    if claims.exists():
        print(claims.read_text())


if __name__ == "__main__":
    main()
