"""Snakemake wrapper: make every figure/table entry an experiment declares."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _logging import setup  # noqa: E402

import pandas as pd  # noqa: E402

from dpbandits.aggregate import load_curves  # noqa: E402
from dpbandits.outputs import make_outputs  # noqa: E402

log = setup(snakemake.log[0])  # noqa: F821
name = snakemake.params.experiment  # noqa: F821
written = make_outputs(
    name,
    snakemake.config["experiments"][name],  # noqa: F821
    pd.read_csv(snakemake.input.summary),  # noqa: F821
    load_curves(snakemake.input.curves),  # noqa: F821
    Path(snakemake.config["paper"]),  # noqa: F821
)
missing = {str(Path(p)) for p in snakemake.output} - {str(Path(p)) for p in written}  # noqa: F821
if missing:
    raise RuntimeError(f"outputs of {name} did not write {sorted(missing)}")
log.info("wrote %s", ", ".join(map(str, written)))
