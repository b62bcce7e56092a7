# Shards of an experiment → tidy summary.csv (one row per trial) and curves.h5. A shard that
# cannot be read, or whose stored spec is not the config's, is moved to results/quarantine and
# the job fails with one line: rerunning the same command recomputes it.

from dpbandits.aggregate import CURVE_STATS, NON_PRIVATE


rule aggregate:
    priority: FIRST
    input:
        lambda wildcards: shard_files(wildcards.experiment),
    output:
        summary=f"{RESULTS}/{{experiment}}/summary.csv",
        curves=f"{RESULTS}/{{experiment}}/curves.h5",
    wildcard_constraints:
        experiment=r"[A-Za-z0-9_]+",
    params:
        grid=lambda wildcards: grid_columns(config, wildcards.experiment),
        specs=lambda wildcards: {f"{RESULTS}/{s.path}": s.spec
                                 for s in SHARDS[wildcards.experiment]},
        quarantine=f"{RESULTS}/quarantine",
        # the layout of summary.csv and curves.h5: results aggregated by another layout rerun
        layout={"curve_stats": list(CURVE_STATS), "non_private": NON_PRIVATE},
    log:
        f"{RESULTS}/logs/aggregate/{{experiment}}.log",
    resources:
        runtime=lambda wildcards, attempt: 30 * attempt,
        mem_mb=lambda wildcards, attempt: 4000 * attempt,
    script:
        "../scripts/aggregate.py"
