"""Route a script's logging and warnings to its Snakemake log file (warnings and errors also to
the terminal), and an uncaught exception's traceback to both."""

import logging
import sys
from types import TracebackType


def setup(log_path: str) -> logging.Logger:
    """Log INFO and above to `log_path`, WARNING and above also to stderr."""
    to_file = logging.FileHandler(log_path, mode="w")
    to_terminal = logging.StreamHandler(sys.stderr)
    to_terminal.setLevel(logging.WARNING)
    logging.basicConfig(level=logging.INFO, handlers=[to_file, to_terminal],
                        format="%(asctime)s %(name)s %(levelname)s %(message)s", force=True)
    logging.captureWarnings(True)
    log = logging.getLogger("dpbandits.workflow")

    def log_uncaught(kind: type[BaseException], exc: BaseException,
                     tb: TracebackType | None) -> None:
        log.error("uncaught exception", exc_info=(kind, exc, tb))

    sys.excepthook = log_uncaught
    return log
