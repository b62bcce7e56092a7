"""Snakemake wrapper: summaries + reproduction.json → numbers.tex and generated/*.tex."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from dpbandits.atomic import write_text_atomic
from dpbandits.paper.latex import paper_includes, verdict_table
from dpbandits.paper.numbers import write_numbers
from dpbandits.paper.results import load_summaries

from _logging import setup

log = setup(snakemake.log[0])
config = snakemake.config
rep = json.loads(Path(snakemake.input.report).read_text())
numbers = write_numbers(config, load_summaries(config, snakemake.input.summaries), rep,
                        snakemake.output.numbers)
for paper, path in zip(snakemake.params.papers, snakemake.output.papers, strict=True):
    write_text_atomic(path, paper_includes(config, paper))
write_text_atomic(snakemake.output.verdicts, verdict_table(rep))
log.info("wrote %d number macros and %d paper sections", len(numbers), len(snakemake.params.papers))
