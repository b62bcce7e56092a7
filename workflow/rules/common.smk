# Configuration validation and the experiment grid → one shard per simulate job.
import json
import sys


from dpbandits import run_lock
from dpbandits.config import all_shards, grid_columns, validate_config
from dpbandits.errors import DPBanditsError
from dpbandits.outputs import output_files

try:
    validate_config(config)

    SHARDS = all_shards(config)
    OUTPUT_FILES = {
        name: [[f"{config['paper']}/{f}" for f in output_files(name, spec)]
               for spec in exp["outputs"]]
        for name, exp in config["experiments"].items()
    }
except DPBanditsError as exc:
    sys.stderr.write(f"dpbandits: error: {exc}\n")
    sys.exit(2)

if workflow.is_main_process:  # a lock left by a killed run is cleared (dpbandits.run_lock)
    notice = run_lock.clear_stale()
    if notice:
        sys.stderr.write(f"{notice}\n")
    run_lock.record_owner()

RESULTS = config["results"]
PAPER = config["paper"]
SPEC_BY_PATH = {s.path: s.spec for shards in SHARDS.values() for s in shards}
# Order of the jobs: Snakemake starts the ready jobs of higher priority first (both of its
# schedulers). An experiment's shards get its rank by number of shards, 1 for the experiment with
# the fewest; every other job gets FIRST, above all of them, and runs as soon as it can. The
# experiments with the most shards, whose aggregation and figures take longest, finish first and
# are aggregated while the others simulate; the run ends on the smallest experiments' shards.
SIMULATION_PRIORITY = {
    name: len(SHARDS) - rank
    for rank, name in enumerate(sorted(SHARDS, key=lambda n: -len(SHARDS[n])))
}
FIRST = len(SHARDS) + 1


def shard_files(experiment):
    """Every shard file of one experiment (an unknown one stops the run with one line)."""
    if experiment not in SHARDS:
        sys.stderr.write(f"dpbandits: error: unknown experiment {experiment!r}; allowed: "
                         f"{', '.join(SHARDS)} (see `dpbandits list experiments`)\n")
        sys.exit(2)
    return [f"{RESULTS}/{s.path}" for s in SHARDS[experiment]]


def experiments_in(group):
    return [n for n, e in config["experiments"].items() if e["group"] == group]


def experiment_targets(group):
    """Summaries and every figure/table of the experiments of one group."""
    targets = []
    for name in experiments_in(group):
        targets.append(f"{RESULTS}/{name}/summary.csv")
        targets.extend(f for files in OUTPUT_FILES[name] for f in files)
    return targets


def shard_inputs(wildcards):
    """Files a shard's instance reads (e.g. real-data features)."""
    return SPEC_BY_PATH[f"{wildcards.shard}.h5"]["instance"].get("requires", [])
