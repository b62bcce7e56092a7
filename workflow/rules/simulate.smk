# One job per shard: (experiment, algorithm, ε, instance, block of trials) → one HDF5 file. The
# job is a plain Python process given the shard spec as JSON (the exact floats of the config).
import json
import sys


rule simulate:
    input:
        shard_inputs,
    output:
        f"{RESULTS}/{{shard}}.h5",
    wildcard_constraints:
        shard=r"[A-Za-z0-9_]+/shards/.+",
    params:
        spec=lambda wildcards: json.dumps(SPEC_BY_PATH[f"{wildcards.shard}.h5"]),
        python=sys.executable,
        script=f"{workflow.basedir}/workflow/scripts/simulate.py",
    log:
        f"{RESULTS}/logs/{{shard}}.log",
    resources:
        runtime=lambda wildcards, attempt: 15 * attempt,
        mem_mb=lambda wildcards, attempt: 1000 * attempt,
    threads: 1
    priority: lambda wildcards: SIMULATION_PRIORITY[wildcards.shard.split("/", 1)[0]]
    shell:
        '{params.python:q} {params.script:q} {params.spec:q} {output:q} {log:q}'
