"""Snakemake wrapper: make every figure/table entry an experiment declares (with the published
entries its outputs name)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
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
