# What the terminal shows: the plan when execution starts and a summary at the end, as log
# records the `dpbandits` logger plugin (default profile) turns into progress lines and a table
# (dpbandits.run_log). With Snakemake's own handler they print as one line each.
import json
import os
import shutil
from pathlib import Path

from snakemake.logging import logger

from dpbandits import forkserver, run_cache, warm_up
from dpbandits.bytecode import precompile
from dpbandits.run_log import plan_record, summary_record


FORKSERVER = []  # the run's fork server, when jobs run on this machine (dpbandits.forkserver)
SERVED_SCRIPTS = [f"{workflow.basedir}/workflow/scripts/{name}.py"
                  for name in ("simulate", "aggregate", "make_outputs", "reproduction", "paper_tex")]


def stop_forkserver() -> None:
    """Stop the run's fork server and wait for it (its jobs' CPU then counts as this run's);
    say so if it had failed (its jobs then ran in their own processes). The run's cache goes
    with the server's folder, and here too should the server have died before the run ended."""
    while FORKSERVER:
        status = FORKSERVER.pop().stop()
        if status != 0:
            logger.warning(f"dpbandits: the fork server exited with status {status}; jobs ran "
                           f"in their own processes (see {RESULTS}/logs/forkserver.log)")
    cache = os.environ.pop(run_cache.ENV, None)
    if cache:
        shutil.rmtree(Path(cache).parent, ignore_errors=True)


onstart:
    precompile(Path(workflow.basedir) / "workflow" / "scripts")
    if workflow.local_exec and not workflow.remote_exec and not workflow.touch:
        # the run's kernels compiled once, on every core (dpbandits.warm_up), then loaded by
        # the fork server, whose jobs inherit them
        warm = warm_up.tiny_specs([s.spec for shards in SHARDS.values() for s in shards])
        seconds = warm_up.compile_kernels(warm, max(1, int(workflow.cores)))
        if seconds:
            logger.info(f"dpbandits: compiled the run's kernels in {seconds:.0f} s (once per "
                        "version of the sources)")
        os.environ[warm_up.ENV] = json.dumps(warm)
        server = forkserver.start(SERVED_SCRIPTS, f"{RESULTS}/logs/forkserver.log")
        FORKSERVER.append(server)
        os.environ[forkserver.ENV] = server.socket_path
        # the draws the run's jobs share (dpbandits.run_cache), removed with the server's folder
        os.environ[run_cache.ENV] = str(Path(server.socket_path).parent / "run_cache")
    record = plan_record(
        workflow.dag.jobs,
        workflow.dag.needrun_jobs(),
        {name: len(shards) for name, shards in SHARDS.items()},
        {name: [f for files in OUTPUT_FILES[name] for f in files] for name in OUTPUT_FILES},
        logs=f"{RESULTS}/logs",
        paper=PAPER,
    )
    plan = record["plan"]["experiments"].values()
    logger.info(
        f"dpbandits: {sum(p['to_run'] for p in plan)} of {sum(p['shards'] for p in plan)} "
        "shards to run",
        extra=record,
    )


onsuccess:
    stop_forkserver()
    from dpbandits.paper.render import summary_line_of  # pandas and scipy: only at the end

    line = summary_line_of(f"{PAPER}/reproduction.json")
    verdicts = f"{line} (details: {PAPER}/reproduction.md)" if line else None
    logger.info(f"dpbandits reproduction: {verdicts}" if verdicts else "",
                extra=summary_record(verdicts))


onerror:
    stop_forkserver()
