"""Snakemake wrapper: main.tex + generated sources → main.pdf (latexmk, else pdflatex)."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from dpbandits.errors import DPBanditsError
from dpbandits.paper.pdf import build_pdf

from _logging import setup

log = setup(snakemake.log[0])
try:
    tool = build_pdf(Path(snakemake.input.main), Path(snakemake.config["paper"]),
                     Path(snakemake.output.pdf))
except DPBanditsError as exc:
    root = logging.getLogger()
    for handler in list(root.handlers):
        if not isinstance(handler, logging.FileHandler):
            root.removeHandler(handler)
    log.error("%s", exc)
    sys.stderr.write(f"dpbandits: error: {exc}\n")
    sys.exit(2)
log.info("built %s with %s", snakemake.output.pdf, tool)
