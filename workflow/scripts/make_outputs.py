"""Snakemake wrapper: make every figure/table entry an experiment declares (with the published
entries its outputs name). Runs in the run's fork server where there is one (simulate.py)."""

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


def preload() -> None:
    """Import what `main` needs (the fork server does this once)."""
    import pandas  # noqa: F401
    import snakemake.iocontainers  # noqa: F401

    import dpbandits.aggregate  # noqa: F401
    import dpbandits.paper.published  # noqa: F401
    from dpbandits.outputs import OUTPUTS
    from dpbandits.scale import paper_config

    for name in OUTPUTS.names():  # every kind's maker module, and with them matplotlib
        OUTPUTS.get(name).maker_function()
    paper_config()  # read once: every experiment's scale mark compares with it


def main(snakemake: Any) -> int:
    """Write the experiment's outputs; fail if one it declares was not written."""
    import pandas as pd

    from dpbandits.aggregate import load_curves
    from dpbandits.outputs import make_outputs
    from dpbandits.paper.published import load_published

    from _logging import setup

    log = setup(snakemake.log[0])
    name = snakemake.params.experiment
    written = make_outputs(
        name,
        snakemake.config["experiments"][name],
        pd.read_csv(snakemake.input.summary),
        load_curves(snakemake.input.curves),
        Path(snakemake.config["paper"]),
        load_published(snakemake.input.published),
        config=snakemake.config,
        paper_config=snakemake.input.paper_config,
    )
    missing = {str(Path(p)) for p in snakemake.output} - {str(Path(p)) for p in written}
    if missing:
        raise RuntimeError(f"outputs of {name} did not write {sorted(missing)}")
    log.info("wrote %s", ", ".join(map(str, written)))
    return 0


if __name__ == "__main__":
    from dpbandits.forkserver import run

    # `snakemake`: from Snakemake's preamble, which runs a copy of this file
    run(f"{snakemake.scriptdir}/make_outputs.py", main, snakemake=snakemake)
