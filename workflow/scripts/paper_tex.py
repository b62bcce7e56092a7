"""Snakemake wrapper: summaries + reproduction.json → numbers.tex and generated/*.tex. Runs in
the run's fork server where there is one (simulate.py)."""

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


def preload() -> None:
    """Import what `main` needs (the fork server does this once)."""
    import snakemake.iocontainers  # noqa: F401

    import dpbandits.paper.latex  # noqa: F401
    import dpbandits.paper.numbers  # noqa: F401
    import dpbandits.paper.results  # noqa: F401


def main(snakemake: Any) -> int:
    """Write the number macros, the papers' sections and the verdict table."""
    import json

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
    log.info("wrote %d number macros and %d paper sections", len(numbers),
             len(snakemake.params.papers))
    return 0


if __name__ == "__main__":
    from dpbandits.forkserver import run

    # `snakemake`: from Snakemake's preamble, which runs a copy of this file
    run(f"{snakemake.scriptdir}/paper_tex.py", main, snakemake=snakemake)
