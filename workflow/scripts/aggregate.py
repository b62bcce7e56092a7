"""Snakemake wrapper: shards → summary.csv + curves.h5."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from dpbandits.aggregate import aggregate

from _logging import setup

log = setup(snakemake.log[0])
summary = aggregate(
    list(snakemake.input),
    snakemake.output.summary,
    snakemake.output.curves,
    dict(snakemake.params.grid),
)
log.info("aggregated %d shards into %d rows", len(snakemake.input), len(summary))
