"""Snakemake logger plugin `dpbandits`: a readable terminal view of a run (`dpbandits.run_log`).

Selected with `snakemake --logger dpbandits` (the default profile does). Dry runs and
`--verbose` runs print what Snakemake's own handler prints.
"""

from __future__ import annotations

import sys
from logging import LogRecord

from snakemake_interface_logger_plugins.base import LogHandlerBase

from dpbandits.config import SNAKEMAKE_YAML_ERROR, configfile_error
from dpbandits.run_log import RunLog


class LogHandler(LogHandlerBase):
    """Writes the lines of a `RunLog` to the terminal."""

    def __post_init__(self) -> None:
        settings = self.common_settings
        self.compact = not (settings.dryrun or settings.verbose or settings.debug_dag)
        self.stream = sys.stdout if settings.stdout else sys.stderr
        self.run_log = RunLog()

    def emit(self, record: LogRecord) -> None:
        """Print the record's lines (compact view) or the record as Snakemake formats it."""
        try:
            lines = self.run_log.handle(record, self.format) if self.compact else [
                self.format(record)]
            if any(SNAKEMAKE_YAML_ERROR in line for line in lines):
                found = configfile_error(sys.argv)
                lines = [f"dpbandits: error: {found}"] if found else lines
            for line in lines:
                self.stream.write(line + "\n")
            self.stream.flush()
        except Exception:  # a logging failure must not stop the run
            self.handleError(record)

    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        """The compact view sees every record; otherwise Snakemake's default filter applies."""
        return self.compact

    @property
    def has_formatter(self) -> bool:
        return False

    @property
    def needs_rulegraph(self) -> bool:
        return False
