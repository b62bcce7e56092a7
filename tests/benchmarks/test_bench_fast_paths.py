"""The table-rounds benchmark runs both ways in real processes and compares the shards' bits."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
from bench_fast_paths import digest, fast_path_shards  # noqa: E402

from dpbandits.simulate import run_shard  # noqa: E402


def test_only_shards_that_play_tables_are_picked() -> None:
    specs = fast_path_shards(REPO / "config" / "smoke.yaml", ["glm_table2"], "", 1)
    assert specs and all(len(s["trials"]) == 1 for s in specs)
    tables = fast_path_shards(REPO / "config" / "smoke.yaml", ["ts_synthetic"], "", 5)
    assert {s["policy"] for s in tables} == {
        "LinTS", "LinUCB", "AdaPrivate-TS", "AdaPrivate-TS-Amp", "AdaPrivate-TS-Adaptive",
        "AdaPrivate-UCB", "zCDP-Episodic", "RarelySwitching-zCDP", "AdaC-OFUL-zCDP", "JDP-LinUCB",
        "DGS-LinUCB"}


def test_the_digest_sees_one_bit_and_ignores_wall_time() -> None:
    spec = fast_path_shards(REPO / "config" / "smoke.yaml", ["glm_table2"], "strict", 2)[0]
    data = run_shard(spec)
    before = digest(data)
    data.wall_time = data.wall_time + 1.0
    assert digest(data) == before
    data.cum_regret[0, -1] = np.nextafter(data.cum_regret[0, -1], np.inf)
    assert digest(data) != before


@pytest.mark.parametrize("experiment,algorithm", [
    ("glm_table2", "ab8fd16"), ("ts_synthetic", "AdaPrivate-UCB")])
def test_both_ways_give_the_same_bits_on_smoke_shards(tmp_path: Path, experiment: str,
                                                      algorithm: str) -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "bench_fast_paths.py"), experiment,
         "--config", str(REPO / "config" / "smoke.yaml"), "--trials", "2",
         "--algorithm", algorithm], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "0 with different bits" in proc.stdout
    assert "tables " in proc.stdout
