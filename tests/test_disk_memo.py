"""Public-constant results shared by the jobs of a run through one JSON file."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dpbandits import numerics
from dpbandits.disk_memo import DiskMemo


@pytest.fixture
def memo(tmp_path, monkeypatch) -> DiskMemo:
    monkeypatch.setenv("DPBANDITS_CACHE", str(tmp_path / "cache"))
    return DiskMemo("kind-v1.json")


def test_values_persist_across_processes(memo: DiskMemo) -> None:
    assert memo.get("a") is None
    memo.put("a", [1.5, 2, 3])
    assert not memo.path().exists()  # written once, at the flush
    memo.flush()
    other = DiskMemo("kind-v1.json")  # another job of the run
    assert other.get("a") == [1.5, 2, 3]
    other.put("b", 0.1)
    other.flush()
    memo.clear()
    assert json.loads(memo.path().read_text()) == {"a": [1.5, 2, 3], "b": 0.1}
    assert memo.get("b") == 0.1


def test_a_process_writes_its_values_when_it_exits(tmp_path) -> None:
    cache = tmp_path / "cache"
    code = ("from dpbandits.disk_memo import DiskMemo\n"
            "memo = DiskMemo('kind-v1.json')\n"
            "memo.put('a', 1.0)\nmemo.put('b', [2.0])\n")
    env = {**os.environ, "DPBANDITS_CACHE": str(cache)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    written = cache / f"numerics-{numerics.tag()}" / "kind-v1.json"
    assert json.loads(written.read_text()) == {"a": 1.0, "b": [2.0]}
    killed = code.replace("'a', 1.0", "'c', 3.0") + "import os\nos._exit(0)\n"
    subprocess.run([sys.executable, "-c", killed], env=env, check=True)
    assert "c" not in json.loads(written.read_text())  # the control


def test_machines_with_other_numerics_keep_their_own_values(memo: DiskMemo, monkeypatch
                                                            ) -> None:
    """A value computed where the BLAS kernels differ (another fingerprint) is not read here;
    with the same fingerprint it is."""
    here = numerics.tag()
    monkeypatch.setattr(numerics, "tag", lambda: "another-machine")
    memo.put("a", 1.0000000000000002)
    memo.flush()
    monkeypatch.setattr(numerics, "tag", lambda: here)
    assert DiskMemo("kind-v1.json").get("a") is None
    monkeypatch.setattr(numerics, "tag", lambda: "another-machine")
    assert DiskMemo("kind-v1.json").get("a") == 1.0000000000000002  # the control


def test_unreadable_file_only_costs_recomputation(memo: DiskMemo) -> None:
    memo.path().parent.mkdir(parents=True)
    memo.path().write_text("{not json")
    assert memo.get("a") is None
    memo.put("a", 1.0)
    memo.flush()
    assert json.loads(memo.path().read_text()) == {"a": 1.0}


def test_unwritable_cache_is_not_an_error(tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("DPBANDITS_CACHE", str(blocker / "cache"))  # cannot be created
    memo = DiskMemo("kind-v1.json")
    memo.put("a", 1.0)
    memo.flush()
    assert memo.get("a") == 1.0
    assert not memo.path().exists()
