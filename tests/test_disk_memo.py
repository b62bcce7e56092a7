"""Public-constant results shared by the jobs of a run through one JSON file."""

from __future__ import annotations

import json

import pytest

from dpbandits.disk_memo import DiskMemo


@pytest.fixture
def memo(tmp_path, monkeypatch) -> DiskMemo:
    monkeypatch.setenv("DPBANDITS_CACHE", str(tmp_path / "cache"))
    return DiskMemo("kind-v1.json")


def test_values_persist_across_processes(memo: DiskMemo) -> None:
    assert memo.get("a") is None
    memo.put("a", [1.5, 2, 3])
    other = DiskMemo("kind-v1.json")  # another job of the run
    assert other.get("a") == [1.5, 2, 3]
    other.put("b", 0.1)
    memo.clear()
    assert json.loads(memo.path().read_text()) == {"a": [1.5, 2, 3], "b": 0.1}
    assert memo.get("b") == 0.1


def test_unreadable_file_only_costs_recomputation(memo: DiskMemo) -> None:
    memo.path().parent.mkdir(parents=True)
    memo.path().write_text("{not json")
    assert memo.get("a") is None
    memo.put("a", 1.0)
    assert json.loads(memo.path().read_text()) == {"a": 1.0}


def test_unwritable_cache_is_not_an_error(tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("DPBANDITS_CACHE", str(blocker / "cache"))  # cannot be created
    memo = DiskMemo("kind-v1.json")
    memo.put("a", 1.0)
    assert memo.get("a") == 1.0
    assert not memo.path().exists()
