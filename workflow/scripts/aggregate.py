"""Snakemake wrapper: shards → summary.csv + curves.h5."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from dpbandits.aggregate import aggregate
from dpbandits.errors import DPBanditsError

from _logging import setup

log = setup(snakemake.log[0])
try:
    summary = aggregate(
        list(snakemake.input),
        snakemake.output.summary,
        snakemake.output.curves,
        dict(snakemake.params.grid),
        dict(snakemake.params.specs),
        snakemake.params.quarantine,
    )
except DPBanditsError as exc:
    log.error("%s", exc)
    sys.stderr.write(f"dpbandits: error: {exc}\n")
    sys.exit(2)
log.info("aggregated %d shards into %d rows", len(snakemake.input), len(summary))
