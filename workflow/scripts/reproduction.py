"""Snakemake wrapper: published results + claims + summaries → paper/reproduction.{md,html,json}."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from dpbandits.paper.earlier import load_earlier
from dpbandits.paper.published import load_claims_file, load_published
from dpbandits.paper.render import write_report
from dpbandits.paper.reproduction import build
from dpbandits.paper.results import load_claim_tables, load_summaries

from _logging import setup

log = setup(snakemake.log[0])
config = snakemake.config
rep = build(
    config,
    load_summaries(config, snakemake.input.summaries),
    load_claim_tables(config, snakemake.input.claim_tables),
    load_published(snakemake.input.published),
    load_claims_file(snakemake.input.claims),
    load_earlier(snakemake.input.earlier),
)
write_report(rep, snakemake.output.md, snakemake.output.html, snakemake.output.json)
log.info("reproduction: %s", rep.summary_line())
