"""The terminal view of a run: progress per experiment, a summary, errors shown in full."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dpbandits.config import load_config
from dpbandits.run_log import RunLog, output_places, plan_record, summary_record

from conftest import REPO, SMOKE_TERMINAL


@dataclass
class Rule:
    name: str


@dataclass
class Job:
    rule: Rule
    wildcards_dict: dict = field(default_factory=dict)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def record(msg: str = "", level: int = logging.INFO, **extra: object) -> logging.LogRecord:
    rec = logging.LogRecord("snakemake", level, __file__, 0, msg, None, None)
    rec.__dict__.update(extra)
    return rec


def shard_job(experiment: str, index: int) -> Job:
    return Job(Rule("simulate"), {"shard": f"{experiment}/shards/A/eps~1/inst~0/seeds~{index}"})


def started(run: RunLog, jobid: int, job: Job) -> list[str]:
    return run.handle(record(event="job_info", jobid=jobid, rule_name=job.rule.name,
                             wildcards=job.wildcards_dict), str)


def finished(run: RunLog, jobid: int) -> list[str]:
    return run.handle(record(event="job_finished", job_id=jobid), str)


@pytest.fixture
def run() -> tuple[RunLog, Clock]:
    """A run of experiment `e`: 3 shards, 2 to run (one reused), outputs under paper/."""
    clock = Clock()
    log = RunLog(interval=10.0, clock=clock)
    jobs = [shard_job("e", i) for i in range(3)] + [Job(Rule("aggregate"), {"experiment": "e"}),
                                                     Job(Rule("outputs_e"))]
    extra = plan_record(jobs, jobs[:2] + jobs[3:], {"e": 3, "unused": 5},
                        {"e": ["paper/figures/e_regret.png", "paper/tables/e.md"]},
                        logs="results/logs", paper="paper")
    lines = log.handle(record(**extra), str)
    assert lines == ["dpbandits: 2 of 3 shards to run (1 reused) in 1 of 1 experiments; "
                     "per-job logs in results/logs/"]
    return log, clock


def test_progress_lines_are_throttled_per_experiment_and_close_each_stage(run):
    log, clock = run
    assert started(log, 1, shard_job("e", 0)) == []
    clock.now = 3.0
    assert finished(log, 1) == []  # within the interval: nothing
    started(log, 2, shard_job("e", 1))
    clock.now = 12.0
    assert finished(log, 2) == ["[0:12] e                      shards complete 3/3"]
    started(log, 3, Job(Rule("aggregate"), {"experiment": "e"}))
    assert finished(log, 3) == ["[0:12] e                      summary written"]
    started(log, 4, Job(Rule("outputs_e")))
    clock.now = 75.0
    assert finished(log, 4) == ["[1:15] e                      figures and tables written"]
    summary = log.handle(record(**summary_record("3 reproduced, 1 differs")), str)
    assert summary[1].startswith("dpbandits: finished in 1:15")
    row = next(line for line in summary if line.strip().startswith("e "))
    assert row.split()[:4] == ["e", "2", "1", "1:15"]
    assert "figures/e*, tables/e*" in row
    assert summary[-1] == "  reproduction: 3 reproduced, 1 differs"


def test_an_unfinished_interval_still_reports_progress_after_it(run):
    log, clock = run
    started(log, 1, shard_job("e", 0))
    clock.now = 10.5
    assert finished(log, 1) == ["[0:10] e                      shards 2/3"]


def test_errors_and_warnings_are_printed_as_snakemake_formats_them(run):
    log, _ = run
    failed = record("Error in rule simulate", logging.ERROR, event="job_error")
    assert log.handle(failed, lambda r: f"FORMATTED {r.msg}") == [
        "FORMATTED Error in rule simulate"]
    warning = record("a warning", logging.WARNING)
    assert log.handle(warning, lambda r: r.msg) == ["a warning"]
    # Negative control: routine records (job blocks, progress) print nothing.
    assert log.handle(record("1 of 9 steps", event="progress", done=1, total=9), str) == []
    assert log.handle(record("Select jobs to execute..."), str) == []
    assert log.handle(record("Nothing to be done (all requested files are present)"),
                      lambda r: r.msg) == ["Nothing to be done (all requested files are present)"]


def test_output_places_are_folders_relative_to_the_paper_folder():
    files = ["out/p/figures/x_a.png", "out/p/figures/x_a.pdf", "out/p/tables/x.md"]
    assert output_places("x", files, "out/p") == ["figures/x*", "tables/x*"]


def test_the_smoke_run_prints_a_short_readable_log(smoke_run: Path):
    """The real smoke run (`--logger dpbandits`): a plan, progress and a row per experiment."""
    text = (smoke_run / SMOKE_TERMINAL).read_text()
    lines = text.splitlines()
    experiments = load_config(REPO / "config" / "smoke.yaml")["experiments"]
    synthetic = [n for n, e in experiments.items() if e["group"] == "synthetic"]
    assert len(lines) < 12 * len(synthetic), text
    assert any(" shards to run (0 reused)" in line for line in lines), text
    rows = {line.split()[0]: line for line in lines if line.startswith("  ")}
    for name in synthetic:
        assert name in rows, f"{name} missing from the summary:\n{text}"
        assert f"{name}*" in rows[name]
    assert any(line.startswith("  reproduction: ") for line in lines), text
    assert "rule simulate:" not in text  # Snakemake's per-job blocks are not printed
