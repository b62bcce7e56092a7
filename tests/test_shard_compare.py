"""The bitwise shard comparison used by the SLURM and interrupted-run tests detects changes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from shard_compare import (
    compare_shards,
    shard_differences,
    shard_digest,
    summary_differences,
)

from dpbandits.storage import ShardData, write_shard

from helpers import small_spec


def _shard(wall: float = 1.0, **changes: object) -> ShardData:
    rng = np.random.default_rng(5)
    regret = np.cumsum(rng.random((3, 60)), axis=1)
    data = ShardData(
        spec=small_spec(),
        instance={"kappa": 0.3},
        trials=np.array([0, 1, 2]),
        checkpoints=np.arange(1, 61),
        cum_regret=regret,
        cum_reward=np.cumsum(rng.random((3, 60)), axis=1),
        wall_time=np.full(3, wall),
        ledger=["[]", "[]", "[]"],
        diagnostics={"fits": np.array([1.0, 2.0, 3.0])},
        events={0: {"switch_times": np.array([3, 9])}},
        attrs={"git_commit": "unknown"},
    )
    for name, value in changes.items():
        setattr(data, name, value)
    return data


def test_identical_results_with_different_timings_compare_equal(tmp_path: Path):
    write_shard(tmp_path / "a" / "s.h5", _shard(wall=1.0))
    write_shard(tmp_path / "b" / "s.h5", _shard(wall=7.5))
    assert compare_shards(tmp_path / "a", tmp_path / "b", ["s.h5"]) == {}


def test_one_ulp_change_in_regret_is_reported(tmp_path: Path):
    base = _shard()
    changed = base.cum_regret.copy()
    changed[1, 30] = np.nextafter(changed[1, 30], np.inf)
    write_shard(tmp_path / "a.h5", base)
    write_shard(tmp_path / "b.h5", _shard(cum_regret=changed))
    assert shard_differences(tmp_path / "a.h5", tmp_path / "b.h5") == [
        "dataset cum_regret differs"
    ]


def test_changed_event_ledger_and_extra_diagnostic_are_reported(tmp_path: Path):
    write_shard(tmp_path / "a.h5", _shard())
    write_shard(tmp_path / "b.h5", _shard(
        events={0: {"switch_times": np.array([3, 10])}},
        ledger=["[]", "[1]", "[]"],
        diagnostics={"fits": np.array([1.0, 2.0, 3.0]), "extra": np.zeros(3)},
    ))
    problems = shard_differences(tmp_path / "a.h5", tmp_path / "b.h5")
    assert "dataset events/0/switch_times differs" in problems
    assert "dataset ledger differs" in problems
    assert any("diagnostics/extra only in one file" in p for p in problems)


def test_missing_shard_is_reported(tmp_path: Path):
    write_shard(tmp_path / "a" / "s.h5", _shard())
    (tmp_path / "b").mkdir()
    report = compare_shards(tmp_path / "a", tmp_path / "b", ["s.h5"])
    assert list(report) == ["s.h5"] and report["s.h5"][0].startswith("missing")


def test_summary_regret_difference_is_reported(tmp_path: Path):
    rows = pd.DataFrame({
        "algorithm": ["A", "A", "B"], "epsilon": [np.nan, np.nan, 1.0],
        "instance_index": [0, 0, 0], "seed": [0, 1, 0], "T": [60, 60, 60],
        "regret": [1.5, 2.25, 3.0], "reward": [10.0, 11.0, 12.0],
        "mean_reward": [0.1, 0.2, 0.3], "wall_time": [0.1, 0.2, 0.3],
    })
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    rows.to_csv(tmp_path / "a" / "summary.csv", index=False)
    shuffled = rows.iloc[[2, 0, 1]].assign(wall_time=[9.0, 9.0, 9.0])
    shuffled.to_csv(tmp_path / "b" / "summary.csv", index=False)
    assert summary_differences(tmp_path / "a" / "summary.csv", tmp_path / "b" / "summary.csv") == []
    shuffled.loc[0, "regret"] = 3.0000000000000004
    shuffled.to_csv(tmp_path / "b" / "summary.csv", index=False)
    assert summary_differences(tmp_path / "a" / "summary.csv", tmp_path / "b" / "summary.csv") == [
        "a/summary.csv: column regret differs"
    ]


def test_digest_changes_with_any_result_byte(tmp_path: Path):
    write_shard(tmp_path / "a" / "s.h5", _shard(wall=1.0))
    write_shard(tmp_path / "b" / "s.h5", _shard(wall=9.0))
    changed = _shard()
    changed.cum_regret = changed.cum_regret.copy()
    changed.cum_regret[1, 7] = np.nextafter(changed.cum_regret[1, 7], np.inf)
    write_shard(tmp_path / "c" / "s.h5", changed)
    a, b, c = (shard_digest(tmp_path / x / "s.h5") for x in "abc")
    assert a == b and a != c
