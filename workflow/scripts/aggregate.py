"""Snakemake wrapper: shards → summary.csv + curves.h5."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _logging import setup  # noqa: E402

from dpbandits.aggregate import aggregate  # noqa: E402

log = setup(snakemake.log[0])  # noqa: F821
summary = aggregate(
    list(snakemake.input),  # noqa: F821
    snakemake.output.summary,  # noqa: F821
    snakemake.output.curves,  # noqa: F821
    dict(snakemake.params.grid),  # noqa: F821
)
log.info("aggregated %d shards into %d rows", len(snakemake.input), len(summary))  # noqa: F821
