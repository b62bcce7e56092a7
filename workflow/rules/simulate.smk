# One job per shard: (experiment, algorithm, ε, instance, block of trials) → one HDF5 file.


rule simulate:
    input:
        shard_inputs,
    output:
        f"{RESULTS}/{{shard}}.h5",
    wildcard_constraints:
        shard=r"[A-Za-z0-9_]+/shards/.+",
    params:
        spec=lambda wildcards: SPEC_BY_PATH[f"{wildcards.shard}.h5"],
    log:
        f"{RESULTS}/logs/{{shard}}.log",
    resources:
        runtime=60,
        mem_mb=1000,
    threads: 1
    script:
        "../scripts/simulate.py"
