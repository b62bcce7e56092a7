"""Route a script's logging and warnings to its Snakemake log file."""

import logging
import sys


def setup(log_path: str) -> logging.Logger:
    handler = logging.FileHandler(log_path, mode="w")
    logging.basicConfig(level=logging.INFO, handlers=[handler, logging.StreamHandler(sys.stderr)],
                        format="%(asctime)s %(name)s %(levelname)s %(message)s", force=True)
    logging.captureWarnings(True)
    return logging.getLogger("dpbandits.workflow")
