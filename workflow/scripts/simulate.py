"""Run one shard and write it atomically: `python simulate.py SPEC_JSON OUTPUT LOG`.

A plain script run by the `simulate` rule's shell command (no Snakemake script preamble). In a
local run it hands its arguments to the run's fork server (dpbandits.forkserver), which runs
`main` in a forked copy of a process that has made `preload`'s imports already; without a server
it runs `main` itself. The other job scripts do the same with their `snakemake` object.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def preload() -> None:
    """Import everything a shard may need (the runner, storage, every policy and generator,
    scipy's solvers and special functions), ask git once for the commit its shards record,
    fingerprint the numerics once (the shared cache's folder) and load the run's compiled
    kernels (`dpbandits.warm_up`)."""
    import json

    import scipy.optimize  # noqa: F401 - the calibrations' root finder, imported where used
    import scipy.special  # noqa: F401

    import dpbandits.simulate  # noqa: F401
    from dpbandits import numerics, warm_up
    from dpbandits.instances.registry import GENERATORS
    from dpbandits.policies import POLICIES
    from dpbandits.storage import git_commit

    import _logging  # noqa: F401

    for registry in (POLICIES, GENERATORS):
        for name in registry.names():
            registry.get(name)
    git_commit()
    numerics.tag()
    warm_up.play(json.loads(os.environ.get(warm_up.ENV, "[]")))  # the run's kernels, loaded


def main(argv: list[str]) -> int:
    """Run the shard `argv` = [SPEC_JSON, OUTPUT, LOG] names and write it."""
    import json

    from dpbandits.errors import DPBanditsError
    from dpbandits.run_cache import ENV as RUN_CACHE
    from dpbandits.simulate import run_shard
    from dpbandits.storage import write_shard

    from _logging import setup

    spec_json, output, log_path = argv
    log = setup(log_path)
    log.info("shard %s (run cache: %s)", output, os.environ.get(RUN_CACHE, "none"))
    try:
        data = run_shard(json.loads(spec_json), progress=True)
    except DPBanditsError as exc:  # e.g. an exhausted replay log: one line, nothing written
        log.info("error: %s", exc)
        sys.stderr.write(f"dpbandits: error: {exc}\n")
        return 1
    write_shard(output, data)
    log.info("done: %d trial(s), %.1fs", len(data.trials), data.wall_time.sum())
    return 0


if __name__ == "__main__":
    from dpbandits.forkserver import run

    run(__file__, main, sys.argv[1:])
