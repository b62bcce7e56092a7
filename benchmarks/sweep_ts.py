"""Run an AdaPrivate-TS experiment's shards in one process through the library and time them.

    python benchmarks/sweep_ts.py --experiment ts_synthetic --epsilon 1 [--out DIR]
    python benchmarks/sweep_ts.py --experiment ts_synthetic --aggregate-only [--out DIR]

Each call simulates the shards of the experiment whose ε is in --epsilon (use `none` for the
non-private ones; omit for all), skipping shard files that already exist, and prints wall and
CPU time per shard (CPU time is the one-core cost even on a shared machine). Then it aggregates
every shard present and writes the experiment's tables and figures under DIR/paper, so a sweep
can be split into several runs of a few minutes each. --only keeps the algorithm entries whose
label is listed (a sub-table; shard files are shared with the full experiment).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from dpbandits.aggregate import aggregate, load_curves
from dpbandits.config import experiment_shards, format_epsilon, grid_columns, load_config
from dpbandits.outputs import make_outputs
from dpbandits.paper.published import load_published
from dpbandits.simulate import run_shard
from dpbandits.storage import write_shard

PUBLISHED = Path(__file__).resolve().parents[1] / "paper" / "published"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="ts_synthetic")
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--out", default="/tmp/ts_sweep")
    parser.add_argument("--epsilon", nargs="*", help="ε values of the shards to run ('none')")
    parser.add_argument("--aggregate-only", action="store_true")
    parser.add_argument("--only", nargs="*", help="algorithm entry labels to keep")
    args = parser.parse_args()
    config = load_config(args.config)
    exp = config["experiments"][args.experiment]
    if args.only:
        exp["algorithms"] = [a for a in exp["algorithms"]
                             if a.get("label", a["policy"]) in args.only]
    out = Path(args.out)
    shards = experiment_shards(args.experiment, exp)
    wanted = None if args.epsilon is None else {format_epsilon(None if e == "none" else float(e))
                                                for e in args.epsilon}
    timing = out / "results" / args.experiment / "timing.jsonl"
    timing.parent.mkdir(parents=True, exist_ok=True)
    total_cpu = 0.0
    for shard in shards:
        path = out / "results" / shard.path
        if args.aggregate_only or path.exists():
            continue
        if wanted is not None and format_epsilon(shard.spec["epsilon"]) not in wanted:
            continue
        t0, c0 = time.perf_counter(), time.process_time()
        write_shard(path, run_shard(shard.spec))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        total_cpu += cpu
        with open(timing, "a") as handle:
            handle.write(json.dumps({"shard": shard.path, "wall": wall, "cpu": cpu}) + "\n")
        print(f"wall {wall:6.2f}s  cpu {cpu:6.2f}s  {shard.path}", flush=True)
    print(f"simulated: {total_cpu:.1f}s cpu in this run")
    paths = [out / "results" / s.path for s in shards if (out / "results" / s.path).exists()]
    print(f"{len(paths)} of {len(shards)} shards present")
    if len(paths) < len(shards):
        return
    results = out / "results" / args.experiment
    summary = aggregate(paths, results / "summary.csv", results / "curves.h5",
                        grid_columns({"experiments": {args.experiment: exp}}, args.experiment))
    written = make_outputs(args.experiment, exp, summary, load_curves(results / "curves.h5"),
                           out / "paper", load_published(PUBLISHED.glob("*.yaml")))
    if timing.exists():
        rows = [json.loads(line) for line in timing.read_text().splitlines()]
        cpu = sum(r["cpu"] for r in rows)
        print(f"all shards: {cpu:.0f}s cpu in total = {cpu / 120:.1f} min on 2 cores "
              f"(simulation only, {len(rows)} timed shards)")
    for path in written:
        print("wrote", path)


if __name__ == "__main__":
    main()
