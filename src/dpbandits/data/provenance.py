"""Which data a real-data result was made from (docs/realdata.md, "Provenance"): the archives'
verification stamps (file, sha256, size, whether it is the release pinned in `datasets.tsv`) and
how the features were fit, carried from the stamps into ratings.h5, the features, every shard
and summary.csv; results from an archive that is not the pinned release are not comparable with
the published numbers."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpbandits.data import DataError
from dpbandits.data.fitting import FeatureFit, parse_fit
from dpbandits.data.registry import pinned_sha256

if TYPE_CHECKING:  # summaries are pandas frames; shard jobs never load pandas for this module
    import pandas as pd

STAMP_KEYS = ("file", "dataset", "sha256", "bytes")
SUMMARY_COLUMNS = ("data_archives", "data_sha256", "data_pinned", "features_fit",
                   "features_leak_free")


def archive_records(stamps: Iterable[str | Path]) -> list[dict[str, Any]]:
    """The archives read, from their verification stamps; `pinned` is decided again against
    the committed table (the sha256 must be the table's, not an override)."""
    records = []
    for stamp in stamps:
        try:
            data = json.loads(Path(stamp).read_text())
        except (OSError, ValueError) as exc:
            raise DataError(f"{stamp}: unreadable verification stamp ({exc}); delete it and "
                            "re-run") from None
        missing = [k for k in STAMP_KEYS if k not in data]
        if missing:
            raise DataError(f"{stamp}: verification stamp lacks {', '.join(missing)}; delete it "
                            "and re-run")
        record = {k: data[k] for k in STAMP_KEYS}
        record["pinned"] = data["sha256"] == pinned_sha256(data["file"])
        records.append(record)
    return sorted(records, key=lambda r: r["file"])


def shard_provenance(dataset: str, archives: list[dict[str, Any]],
                     fit: FeatureFit) -> dict[str, Any]:
    """The `provenance` attribute of a real-data shard."""
    return {"dataset": dataset, "archives": archives,
            "features": {"fit": fit.token, "leak_free": fit.leak_free}}


def summary_fields(provenance: dict[str, Any]) -> dict[str, Any]:
    """summary.csv columns of a shard's provenance (none for a synthetic shard)."""
    if not provenance:
        return {}
    archives = provenance.get("archives", [])
    features = provenance.get("features", {})
    return {
        "data_archives": " ".join(a["file"] for a in archives),
        "data_sha256": " ".join(a["sha256"] for a in archives),
        "data_pinned": bool(archives) and all(bool(a["pinned"]) for a in archives),
        "features_fit": features.get("fit", "whole"),
        "features_leak_free": bool(features.get("leak_free", False)),
    }


def _true(series: pd.Series) -> pd.Series:
    return series.astype(str).str.strip().str.lower().isin(("true", "1", "1.0"))


def _archives(summary: pd.DataFrame) -> list[str]:
    """"<file> (sha256 <first 12>…)" of every archive named in the rows."""
    names = set()
    for files, shas in zip(summary["data_archives"].fillna(""), summary["data_sha256"].fillna(""),
                           strict=True):
        for file, sha in zip(str(files).split(), str(shas).split(), strict=False):
            names.add(f"{file} (sha256 {sha[:12]}…)")
    return sorted(names)


def data_reason(summary: pd.DataFrame) -> str | None:
    """None when every real-data row was made from pinned archives (or the rows are synthetic);
    else why the results are not comparable with the published ones, naming the archive."""
    if "data_pinned" not in summary:
        return None
    bad = summary[~_true(summary["data_pinned"])]
    if bad.empty:
        return None
    names = _archives(bad)
    if not names:
        return ("not comparable: the archive these results were made from is not recorded; "
                "rebuild the data (snakemake re-runs data_parse)")
    return (f"not comparable: made from {', '.join(names)}, not the release pinned in "
            "datasets.tsv")


def data_note(summary: pd.DataFrame) -> str | None:
    """One sentence on the data of a real-data summary: archives, pinned or not, the feature
    mode, the feature-score AUC and coverage on the replayed events (docs/realdata.md, "Signal")
    and the log's own CTR; None for synthetic results."""
    if "features_fit" not in summary or summary.empty:
        return None
    pinned = bool(_true(summary["data_pinned"]).all())
    archives = ", ".join(_archives(summary)) or "archive not recorded"
    tokens = sorted(set(summary["features_fit"].dropna().astype(str)))
    modes = "; ".join(parse_fit(t).text() for t in tokens) or "feature mode not recorded"
    note = f"data {archives}, {'the pinned release' if pinned else 'NOT the pinned release'}; "
    note += modes
    if "feature_auc" in summary and summary["feature_auc"].notna().any():
        note += (f"; feature-score AUC on the replayed events "
                 f"{float(np.nanmean(summary['feature_auc'])):.3f}")
    if "feature_coverage" in summary and summary["feature_coverage"].notna().any():
        note += (f", coverage {100 * float(np.nanmean(summary['feature_coverage'])):.1f} % (their "
                 "user and item both known to the features, not the cold fallback)")
    if "log_ctr" in summary and summary["log_ctr"].notna().any():
        note += (f"; the log's CTR (uniform choice) "
                 f"{float(np.nanmean(summary['log_ctr'])):.4f}")
    return note
