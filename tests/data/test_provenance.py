"""Provenance: the stamps' archives, decided pinned against the committed table, their columns
in summary.csv, and the 'not comparable' reason naming a non-pinned archive."""

import json

import pandas as pd
import pytest

from dpbandits.data import DataError
from dpbandits.data.fitting import FeatureFit
from dpbandits.data.provenance import (
    archive_records,
    data_note,
    data_reason,
    shard_provenance,
    summary_fields,
)
from dpbandits.data.registry import archives

PINNED = archives()["ml-25m.zip"].sha256
OTHER = "ab" * 32


def stamp(tmp_path, name, sha, pinned_claim=True):
    path = tmp_path / f"{name}.verified.json"
    path.write_text(json.dumps({"file": name, "dataset": "ml-25m", "sha256": sha,
                                "bytes": 10, "pinned": pinned_claim}))
    return path


def test_pinned_is_decided_against_the_committed_table_not_the_stamp(tmp_path):
    good = archive_records([stamp(tmp_path, "ml-25m.zip", PINNED)])
    # a stamp written before provenance existed said "pinned" after any sha256 override
    bad = archive_records([stamp(tmp_path, "ml-25m.zip", OTHER, pinned_claim=True)])
    assert good == [{"file": "ml-25m.zip", "dataset": "ml-25m", "sha256": PINNED, "bytes": 10,
                     "pinned": True}]
    assert bad[0]["pinned"] is False and bad[0]["sha256"] == OTHER


def test_a_broken_stamp_is_one_error_line(tmp_path):
    path = tmp_path / "x.verified.json"
    path.write_text("{}")
    with pytest.raises(DataError, match="lacks file, dataset, sha256, bytes"):
        archive_records([path])


def summary(sha, fit="prefix10", auc=0.51):
    prov = shard_provenance("ml-25m", archive_records_for(sha), FeatureFit("prefix", 10)
                            if fit == "prefix10" else FeatureFit("whole"))
    row = {"algorithm": "LinTS", "seed": 0, "feature_auc": auc, **summary_fields(prov)}
    return pd.DataFrame([row, {**row, "seed": 1}])


def archive_records_for(sha):
    return [{"file": "ml-25m.zip", "dataset": "ml-25m", "sha256": sha, "bytes": 10,
             "pinned": sha == PINNED}]


def test_summary_columns_and_the_report_reason():
    fields = summary_fields(shard_provenance("ml-25m", archive_records_for(OTHER),
                                             FeatureFit("split", 80)))
    assert fields == {"data_archives": "ml-25m.zip", "data_sha256": OTHER, "data_pinned": False,
                      "features_fit": "split80", "features_leak_free": True}
    assert summary_fields({}) == {}
    assert data_reason(summary(PINNED)) is None
    reason = data_reason(summary(OTHER))
    assert reason.startswith("not comparable: made from ml-25m.zip (sha256 abababababab…)")
    assert "not the release pinned" in reason
    # read back from CSV (booleans become text)
    assert data_reason(pd.read_csv(pd.io.common.StringIO(summary(PINNED).to_csv()))) is None
    assert data_reason(pd.DataFrame({"algorithm": ["GLOC"], "regret": [1.0]})) is None


def test_data_note_names_archive_mode_and_auc():
    note = data_note(summary(PINNED))
    assert "ml-25m.zip (sha256 8b21cfb7eb17…), the pinned release" in note
    assert "earliest 10 % of events only (leak-free)" in note and "AUC" in note and "0.510" in note
    assert "NOT the pinned release" in data_note(summary(OTHER, fit="whole"))
    assert "whole log" in data_note(summary(OTHER, fit="whole"))
    assert data_note(pd.DataFrame({"regret": [1.0]})) is None
