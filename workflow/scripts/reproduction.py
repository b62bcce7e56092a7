"""Snakemake wrapper: published results + claims + summaries → paper/reproduction.{md,html,json}.
Runs in the run's fork server where there is one (simulate.py)."""

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


def preload() -> None:
    """Import what `main` needs (the fork server does this once)."""
    import snakemake.iocontainers  # noqa: F401

    import dpbandits.paper.earlier  # noqa: F401
    import dpbandits.paper.published  # noqa: F401
    import dpbandits.paper.render  # noqa: F401
    import dpbandits.paper.reproduction  # noqa: F401
    import dpbandits.paper.results  # noqa: F401


def main(snakemake: Any) -> int:
    """Build and write the reproduction report."""
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
    return 0


if __name__ == "__main__":
    from dpbandits.forkserver import run

    # `snakemake`: from Snakemake's preamble, which runs a copy of this file
    run(f"{snakemake.scriptdir}/reproduction.py", main, snakemake=snakemake)
