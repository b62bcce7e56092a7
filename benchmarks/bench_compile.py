"""What compiling the kernels costs: a run's warm-up specs with an empty cache, then loaded.

Takes the warm-up specs of a config (`dpbandits.warm_up.tiny_specs`: one 300-round shard copy
per algorithm entry), and in fresh one-thread processes with a new, empty kernel cache: plays
each spec once, in order, recording the CPU seconds of each (what compiling its kernels costs,
less what earlier specs compiled), then plays them all again in another process (what loading
the compiled code costs a process: the fork server's share). Prints per algorithm and in total,
with the CPU model; writes results/bench_compile.csv.

    .venv/bin/python benchmarks/bench_compile.py [--config config/config.yaml]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from machine import RESULTS, cpu_model, machine_line, write_rows

REPO = Path(__file__).parents[1]

CHILD = """
import json, sys, time
from dpbandits.warm_up import play
specs = json.loads(open(sys.argv[1]).read())
start = time.process_time()
import numba  # noqa: F401 - its import counted apart from the kernels
rows = [["(import numba)", time.process_time() - start]]
for spec in specs:
    start = time.process_time()
    played = play([spec])
    rows.append([spec["algorithm"] + ("" if played else " (failed)"), time.process_time() - start])
print(json.dumps(rows))
"""


def timed_plays(specs_file: Path, cache: Path) -> list[tuple[str, float]]:
    env = {**os.environ, "DPBANDITS_CACHE": str(cache), "OPENBLAS_NUM_THREADS": "1",
           "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(specs_file)], env=env, text=True,
                          capture_output=True, check=True)
    return [(name, float(seconds)) for name, seconds in json.loads(proc.stdout)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(REPO / "config" / "config.yaml"))
    args = parser.parse_args()
    print(machine_line(), flush=True)
    from dpbandits.config import all_shards, load_config
    from dpbandits.warm_up import tiny_specs

    shards = all_shards(load_config(args.config))
    specs = tiny_specs([s.spec for experiment in shards.values() for s in experiment])
    with tempfile.TemporaryDirectory(prefix="dpb-compile-") as tmp:
        specs_file = Path(tmp) / "specs.json"
        specs_file.write_text(json.dumps(specs))
        cold = timed_plays(specs_file, Path(tmp) / "cache")
        warm = timed_plays(specs_file, Path(tmp) / "cache")
    model = cpu_model()
    rows = [{"cpu": model, "what": name, "cold_cpu_s": round(c, 3), "warm_cpu_s": round(w, 3)}
            for (name, c), (_, w) in zip(cold, warm, strict=True)]
    for row in rows:
        print(f"{row['what']:55s} {row['cold_cpu_s']:8.2f} {row['warm_cpu_s']:8.2f}")
    total_cold, total_warm = sum(c for _, c in cold), sum(w for _, w in warm)
    print(f"{len(specs)} warm-up specs: {total_cold:.1f} CPU-s compiling (empty cache), "
          f"{total_warm:.1f} CPU-s loading (warm cache)")
    rows.append({"cpu": model, "what": "total", "cold_cpu_s": round(total_cold, 2),
                 "warm_cpu_s": round(total_warm, 2)})
    write_rows(RESULTS / "bench_compile.csv", rows)


if __name__ == "__main__":
    main()
