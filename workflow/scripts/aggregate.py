"""Snakemake wrapper: shards → summary.csv + curves.h5. Runs in the run's fork server where
there is one (simulate.py)."""

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


def preload() -> None:
    """Import what `main` needs (the fork server does this once)."""
    import snakemake.iocontainers  # noqa: F401

    import dpbandits.aggregate  # noqa: F401


def main(snakemake: Any) -> int:
    """Aggregate the experiment's shards; one error line and exit 2 for bad shards."""
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
        return 2
    log.info("aggregated %d shards into %d rows", len(snakemake.input), len(summary))
    return 0


if __name__ == "__main__":
    from dpbandits.forkserver import run

    # `snakemake`: from Snakemake's preamble, which runs a copy of this file
    run(f"{snakemake.scriptdir}/aggregate.py", main, snakemake=snakemake)
