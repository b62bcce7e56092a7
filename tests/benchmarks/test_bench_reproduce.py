"""The whole-run benchmark sums the fork server's per-job CPU seconds per job script."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from bench_reproduce import served_cpu  # noqa: E402


def test_served_cpu_sums_the_logged_jobs_per_script(tmp_path: Path) -> None:
    """Each finished job's line (as `forkserver._reap` prints it) counts once, for the script
    its start line named; a job still running at the end is not counted (the real log of a run:
tests/test_workflow.py)."""
    log = tmp_path / "forkserver.log"
    log.write_text("fork server 10 serving simulate, aggregate on /tmp/x/socket\n"
                   "job 11: simulate\njob 12: aggregate\njob 11: exit 0, 1.25 CPU-s\n"
                   "job 13: simulate\njob 13: exit 1, 0.50 CPU-s\njob 14: simulate\n"
                   "job 12: exit 137, 2.00 CPU-s\nfork server stopped\n")
    assert served_cpu(log) == {"aggregate": (1, 2.0), "simulate": (2, 1.75)}
    assert served_cpu(tmp_path / "missing.log") == {}
