"""The data stages the workflow runs (download → verify → extract → parse → features), each taking
the config's `data:` mapping, plus the one-line error exit used by the Snakemake scripts.
Stages import their modules themselves so that the light ones start fast."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dpbandits.data.registry import archive_spec, check_data_config
from dpbandits.errors import DPBanditsError

log = logging.getLogger(__name__)


def download(file: str, output: str | Path, data: dict[str, Any] | None) -> None:
    from dpbandits.data.download import fetch_archive

    cfg = check_data_config(data)
    fetch_archive(archive_spec(file, cfg), output, mirror=cfg["mirror"], timeout=cfg["timeout"])


def verify(file: str, archive: str | Path, stamp: str | Path,
           data: dict[str, Any] | None) -> None:
    from dpbandits.data.verify import verify_archive

    verify_archive(archive, archive_spec(file, data), stamp)


def extract(archive: str | Path, target: str | Path) -> None:
    from dpbandits.data.extract import safe_extract

    safe_extract(archive, target)


def parse(dataset: str, raw_dirs: dict[str, str], output: str | Path,
          stamps: list[str] | None = None) -> None:
    from dpbandits.data.parse import parse_dataset
    from dpbandits.data.provenance import archive_records
    from dpbandits.data.ratings import write_log

    log_ = parse_dataset(dataset, raw_dirs)
    log_.archives = archive_records(stamps or [])
    write_log(output, log_)


def svd(ratings: str | Path, output: str | Path, k: int, data: dict[str, Any] | None,
        fit: str = "whole") -> None:
    from dpbandits.data.fitting import parse_fit
    from dpbandits.data.ratings import read_log

    opts = check_data_config(data)["svd"]
    mode = parse_fit(fit)
    log_ = read_log(ratings)
    if mode.mode == "online":
        from dpbandits.data.online import build_online

        build_online(log_, k, mode, opts, output)
        return
    from dpbandits.data.svd import featurize, write_factors

    write_factors(output, featurize(log_, k=k, center=opts["center"], seed=int(opts["seed"]),
                                    fit=mode, shrinkage=float(opts["shrinkage"])))


def run(stage: Callable[..., None], log_path: str | Path, **kwargs: Any) -> None:
    """Run a stage logging to `log_path` (warnings also to stderr, e.g. a computed sha256 that
    is not pinned); a DPBanditsError becomes one `dpbandits: error:` line on stderr (and in the
    log) and exit code 1."""
    to_file = logging.FileHandler(log_path, mode="w")
    to_file.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    to_stderr = logging.StreamHandler(sys.stderr)
    to_stderr.setLevel(logging.WARNING)
    to_stderr.setFormatter(logging.Formatter("dpbandits: %(levelname)s: %(message)s"))
    logging.basicConfig(level=logging.INFO, force=True, handlers=[to_file, to_stderr])
    logging.captureWarnings(True)
    try:
        stage(**kwargs)
    except DPBanditsError as exc:
        log.info("error: %s", exc)
        sys.stderr.write(f"dpbandits: error: {exc}\n")
        sys.exit(1)
