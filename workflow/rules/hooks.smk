# What the terminal shows: the plan when execution starts and a summary at the end, as log
# records the `dpbandits` logger plugin (default profile) turns into progress lines and a table
# (dpbandits.run_log). With Snakemake's own handler they print as one line each.
from pathlib import Path

from snakemake.logging import logger

from dpbandits.bytecode import precompile
from dpbandits.run_log import plan_record, summary_record


onstart:
    precompile(Path(workflow.basedir) / "workflow" / "scripts")
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
    from dpbandits.paper.render import summary_line_of  # pandas and scipy: only at the end

    line = summary_line_of(f"{PAPER}/reproduction.json")
    verdicts = f"{line} (details: {PAPER}/reproduction.md)" if line else None
    logger.info(f"dpbandits reproduction: {verdicts}" if verdicts else "",
                extra=summary_record(verdicts))
