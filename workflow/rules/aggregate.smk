# Shards of an experiment → tidy summary.csv (one row per trial) and curves.h5.


rule aggregate:
    input:
        lambda wildcards: shard_files(wildcards.experiment),
    output:
        summary=f"{RESULTS}/{{experiment}}/summary.csv",
        curves=f"{RESULTS}/{{experiment}}/curves.h5",
    wildcard_constraints:
        experiment=r"[A-Za-z0-9_]+",
    params:
        grid=lambda wildcards: grid_columns(config, wildcards.experiment),
    log:
        f"{RESULTS}/logs/aggregate/{{experiment}}.log",
    resources:
        runtime=lambda wildcards, attempt: 30 * attempt,
        mem_mb=lambda wildcards, attempt: 4000 * attempt,
    script:
        "../scripts/aggregate.py"
