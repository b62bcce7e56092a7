"""What freezing the fork server's heap saves a job: CPU seconds of shards run in forked
children of a process that has made `simulate.py`'s imports, with that heap frozen
(`gc.freeze`, as `dpbandits.forkserver` does) and not, alternating child by child, after
one untimed run of each shard (so both sides find the calibration caches warm).

Each child runs one shard (cut to `--trials`) and writes it to a temporary folder, as a served
job does; the parent reads the child's CPU seconds from `wait4`. Prints every timing, the least
of each side and their ratio per shard, and writes benchmarks/results/bench_fork_gc.csv.

    .venv/bin/python benchmarks/bench_fork_gc.py [--trials 12] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
from pathlib import Path

from bench_ab import shard_spec
from machine import RESULTS, cpu_model, machine_line, write_rows

REPO = Path(__file__).resolve().parents[1]
SHARDS = (  # an allocation-heavy ledger, a compiled ts policy, the GLM ones, a linear one
    ("ts_synthetic", "zCDP-Episodic [c_trigger=1]", 1.0),
    ("ts_synthetic", "AdaPrivate-TS [v=1.0]", 1.0),
    ("glm_table2", "Private-GLM", None),
    ("glm_table2", "GLM-UCB", None),
    ("linear_fig2", "Central DP (Alg. 1)", None),
)


def child_cpu(spec: dict[str, object], folder: str) -> float:
    """CPU seconds of a forked child that runs and writes the shard."""
    from dpbandits.simulate import run_shard
    from dpbandits.storage import write_shard

    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            write_shard(os.path.join(folder, "shard.h5"), run_shard(spec))
            code = 0
        finally:
            os._exit(code)
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"bench_fork_gc: the shard {spec['algorithm']!r} failed in its child")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "workflow" / "scripts"))
    import simulate

    simulate.preload()
    specs = [shard_spec(experiment, algorithm, epsilon, args.trials)
             for experiment, algorithm, epsilon in SHARDS]
    print(machine_line())
    timings: dict[tuple[str, bool], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="dpb-fork-gc-") as folder:
        for spec in specs:  # untimed: the calibration caches are warm for both sides
            child_cpu(spec, folder)
        for repeat in range(args.repeat):
            for spec in specs:
                for frozen in (False, True) if repeat % 2 == 0 else (True, False):
                    gc.collect()
                    if frozen:
                        gc.freeze()
                    seconds = child_cpu(spec, folder)
                    gc.unfreeze()
                    timings.setdefault((str(spec["algorithm"]), frozen), []).append(seconds)
                    print(f"{spec['algorithm']:32s} frozen={frozen!s:5s} {seconds:6.2f} CPU-s",
                          flush=True)
    rows = []
    for spec in specs:
        name = str(spec["algorithm"])
        plain, frozen = min(timings[name, False]), min(timings[name, True])
        print(f"{name:32s} {plain:6.2f} → {frozen:6.2f} CPU-s (frozen ÷ plain "
              f"{frozen / plain:.2f})")
        rows.append({"cpu": cpu_model(), "algorithm": name, "trials": args.trials,
                     "plain_cpu_s": round(plain, 3), "frozen_cpu_s": round(frozen, 3),
                     "ratio": round(frozen / plain, 3)})
    write_rows(RESULTS / "bench_fork_gc.csv", rows)


if __name__ == "__main__":
    main()
