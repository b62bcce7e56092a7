"""The sweep benchmark's regression check fails on a slower row and passes on an equal one."""

from __future__ import annotations

import csv
import os
import sys
from pathlib import Path

import pytest

_ENVIRON = dict(os.environ)
sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from bench_sweep import compare  # noqa: E402

os.environ.clear()  # the benchmark pins BLAS threads for its own process only
os.environ.update(_ENVIRON)

BASELINE = [
    {"cpu": "test CPU", "experiment": "glm_table2", "algorithm": "GLOC", "epsilon": "",
     "runs": 30, "cpu_s_per_run": 0.2, "cpu_s_total": 6.0},
    {"cpu": "test CPU", "experiment": "glm_table2", "algorithm": "Private-GLM", "epsilon": 4.0,
     "runs": 30, "cpu_s_per_run": 0.5, "cpu_s_total": 15.0},
]


@pytest.fixture
def baseline(tmp_path: Path) -> Path:
    path = tmp_path / "bench_sweep.csv"
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(BASELINE[0]))
        writer.writeheader()
        writer.writerows(BASELINE)
    return path


def test_equal_timings_pass(baseline: Path) -> None:
    assert compare([dict(row) for row in BASELINE], baseline, tolerance=1.5)


def test_a_row_twice_as_slow_fails_and_is_named(baseline: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    rows = [dict(row) for row in BASELINE]
    rows[1]["cpu_s_per_run"] = 1.0
    assert not compare(rows, baseline, tolerance=1.5)
    slower = [line for line in capsys.readouterr().out.splitlines() if "SLOWER" in line]
    assert len(slower) == 1 and "Private-GLM" in slower[0]
