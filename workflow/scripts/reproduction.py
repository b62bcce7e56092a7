"""Snakemake wrapper: published results + claims + summaries → paper/reproduction.{md,html,json}."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from dpbandits.report import build, write_report

from _logging import setup

log = setup(snakemake.log[0])
rep = build(
    snakemake.config,
    snakemake.config["results"],
    snakemake.config["paper"],
    snakemake.params.published_dir,
    snakemake.input.claims,
)
write_report(rep, snakemake.output.md, snakemake.output.html, snakemake.output.json)
log.info("reproduction: %s", rep.summary_line())
