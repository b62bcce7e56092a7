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
    benchmark:
        f"{RESULTS}/benchmarks/{{shard}}.tsv"
    resources:
        runtime=lambda wildcards, attempt: 15 * attempt,
        mem_mb=lambda wildcards, attempt: 1000 * attempt,
    threads: 1
    script:
        "../scripts/simulate.py"
