"""The terminal view of a Snakemake run: one progress line per experiment, then a summary.

Snakemake's own output is a block of lines per job (2,000 lines for the smoke run). The
`dpbandits` logger plugin (`snakemake --logger dpbandits`, set in the default profile) feeds the
run's log records to a `RunLog`, which prints instead:

- the plan (shards to run and reused, per experiment) when execution starts;
- `[m:ss] <experiment>  shards done/total` at most every `interval` seconds per experiment, and
  when its shards are complete, its summary is aggregated and its figures and tables are written;
- warnings and errors as Snakemake formats them (a failed job with its log);
- at the end, per experiment: shards run and reused, wall time, where its figures and tables
  are, and the reproduction verdict counts.

Per-job details stay in the per-rule logs (`{results}/logs/...`). The plan and summary records
come from the workflow's `onstart`/`onsuccess` hooks (`plan_record`, `summary_record`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from logging import WARNING, LogRecord
from typing import Any

PLAN_EVENT = "dpbandits_plan"
SUMMARY_EVENT = "dpbandits_summary"
# Snakemake event names (snakemake_interface_logger_plugins.common.LogEvent values).
JOB_INFO, JOB_FINISHED, JOB_ERROR = "job_info", "job_finished", "job_error"
ERRORS = {"job_error", "group_error", "error"}
PASSED_ON = ("Nothing to be done", "Complete log", "Building DAG", "MissingInputException",
             "Locked directory")


@dataclass
class ExperimentProgress:
    """What one experiment has to do in this run and what it has done."""

    shards: int
    to_run: int
    outputs: list[str]
    done: int = 0
    job_time: float = 0.0
    ran_jobs: bool = False
    last_line: float = 0.0
    aggregated: bool = False
    written: bool = False


@dataclass
class RunLog:
    """Turns Snakemake log records into the lines a user reads (`handle` → lines to print)."""

    interval: float = 10.0
    clock: Callable[[], float] = time.monotonic
    start: float = field(default=0.0)
    experiments: dict[str, ExperimentProgress] = field(default_factory=dict)
    paper: str = "paper"
    jobs: dict[int, tuple[str, str | None, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.start = self.clock()

    def handle(self, record: LogRecord, formatted: Callable[[LogRecord], str]) -> list[str]:
        """The lines to print for one record (`formatted` renders it as Snakemake would)."""
        event = str(getattr(record, "event", "") or "")
        if event == PLAN_EVENT:
            return self._plan(record.plan)  # type: ignore[attr-defined]
        if event == SUMMARY_EVENT:
            return self._summary(record.summary)  # type: ignore[attr-defined]
        if event == JOB_INFO:
            self._job_started(record)
            return []
        if event == JOB_FINISHED:
            return self._job_finished(int(record.job_id))  # type: ignore[attr-defined]
        if event in ERRORS or record.levelno >= WARNING:
            text = formatted(record)
            return [text] if text else []
        if not event and str(record.msg).startswith(PASSED_ON):
            return [formatted(record)]
        return []

    def elapsed(self) -> str:
        """Time since the run started, m:ss."""
        return _clock_text(self.clock() - self.start)

    def _plan(self, plan: dict[str, Any]) -> list[str]:
        self.start = self.clock()
        self.paper = plan["paper"]
        self.experiments = {
            name: ExperimentProgress(p["shards"], p["to_run"], p["outputs"], last_line=self.start)
            for name, p in plan["experiments"].items()}
        to_run = sum(p.to_run for p in self.experiments.values())
        shards = sum(p.shards for p in self.experiments.values())
        busy = [name for name, p in self.experiments.items() if p.to_run]
        return [f"dpbandits: {to_run} of {shards} shards to run ({shards - to_run} reused) in "
                f"{len(busy)} of {len(self.experiments)} experiments; per-job logs in "
                f"{plan['logs']}/"]

    def _job_started(self, record: LogRecord) -> None:
        rule = str(getattr(record, "rule_name", ""))
        experiment = experiment_of(rule, getattr(record, "wildcards", None) or {})
        self.jobs[int(record.jobid)] = (rule, experiment, self.clock())  # type: ignore[attr-defined]

    def _job_finished(self, job_id: int) -> list[str]:
        rule, experiment, started = self.jobs.pop(job_id, ("", None, self.clock()))
        progress = self.experiments.get(experiment or "")
        if progress is None:
            return [f"[{self.elapsed()}] {rule} done"] if rule in ("reproduction",) else []
        now = self.clock()
        progress.job_time += now - started
        progress.ran_jobs = True
        if rule == "simulate":
            progress.done += 1
            complete = progress.done >= progress.to_run
            if not complete and now - progress.last_line < self.interval:
                return []
            progress.last_line = now
            state = "shards complete" if complete else "shards"
            return [f"[{self.elapsed()}] {experiment:<22} {state} "
                    f"{progress.shards - progress.to_run + progress.done}/{progress.shards}"]
        if rule == "aggregate":
            progress.aggregated = True
            return [f"[{self.elapsed()}] {experiment:<22} summary written"]
        if rule.startswith("outputs_"):
            progress.written = True
            return [f"[{self.elapsed()}] {experiment:<22} figures and tables written"]
        return []

    def _summary(self, summary: dict[str, Any]) -> list[str]:
        width = max([len(n) for n in self.experiments] + [10])
        lines = ["", f"dpbandits: finished in {self.elapsed()} (job time: the wall time of an "
                     "experiment's jobs, added up)",
                 f"  {'experiment':<{width}}  {'run':>4} {'reused':>6}  {'job time':>8}  "
                 f"outputs in {self.paper}/"]
        for name, p in self.experiments.items():
            job_time = _clock_text(p.job_time) if p.ran_jobs else "-"
            lines.append(f"  {name:<{width}}  {p.done:>4} {p.shards - p.done:>6}  {job_time:>8}  "
                         f"{', '.join(p.outputs) or '-'}")
        if summary.get("reproduction"):
            lines.append(f"  reproduction: {summary['reproduction']}")
        return lines


def _clock_text(seconds: float) -> str:
    minutes, secs = divmod(int(round(max(seconds, 0.0))), 60)
    return f"{minutes}:{secs:02d}"


def output_places(experiment: str, files: Iterable[str], paper: str) -> list[str]:
    """Where an experiment's output files are under `paper`, as `folder/<experiment>*`."""
    places = set()
    for file in files:
        folder = file.removeprefix(f"{paper}/").rpartition("/")[0]
        places.add(f"{folder}/{experiment}*" if folder else f"{experiment}*")
    return sorted(places)


def experiment_of(rule: str, wildcards: Mapping[str, Any]) -> str | None:
    """The experiment a simulate, aggregate or outputs job belongs to (None for the others)."""
    if rule == "simulate":
        return str(wildcards["shard"]).split("/")[0] if "shard" in wildcards else None
    if rule == "aggregate":
        return wildcards.get("experiment")
    return rule.removeprefix("outputs_") if rule.startswith("outputs_") else None


def _experiment_of(job: Any) -> str | None:
    """`experiment_of` for a Snakemake job object."""
    return experiment_of(job.rule.name, job.wildcards_dict)


def plan_record(jobs: Iterable[Any], needrun: Iterable[Any], shards: dict[str, int],
                outputs: dict[str, list[str]], logs: str, paper: str) -> dict[str, Any]:
    """The `extra` of the plan record: per experiment of the DAG, its shards and how many run."""
    in_dag = {_experiment_of(job) for job in jobs} - {None}
    to_run = dict.fromkeys(in_dag, 0)
    for job in needrun:
        if job.rule.name == "simulate" and _experiment_of(job) in to_run:
            to_run[_experiment_of(job)] += 1
    experiments = {name: {"shards": count, "to_run": to_run[name],
                          "outputs": output_places(name, outputs.get(name, []), paper)}
                   for name, count in shards.items() if name in in_dag}
    return {"event": PLAN_EVENT,
            "plan": {"experiments": experiments, "logs": logs, "paper": paper}}


def summary_record(reproduction: str | None) -> dict[str, Any]:
    """The `extra` of the summary record (the reproduction verdict line, if there is a report)."""
    return {"event": SUMMARY_EVENT, "summary": {"reproduction": reproduction}}
