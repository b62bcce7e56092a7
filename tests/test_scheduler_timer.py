"""Snakemake's scheduler keeps one pending re-evaluation timer (dpbandits.scheduler_timer)."""

from __future__ import annotations

import threading
import time

import pytest
from snakemake.scheduling.job_scheduler import JobScheduler

from dpbandits import scheduler_timer


class FakeScheduler:
    """What the method touches: the semaphore a scheduling pass waits on."""

    def __init__(self) -> None:
        self._open_jobs = threading.Semaphore(0)


def passes_within(scheduler: FakeScheduler, seconds: float) -> int:
    count, end = 0, time.monotonic() + seconds
    while scheduler._open_jobs.acquire(timeout=max(0.0, end - time.monotonic())):
        count += 1
    return count


def test_install_replaces_the_method_once() -> None:
    assert scheduler_timer.install() and scheduler_timer.install()
    assert JobScheduler._schedule_reevalutation is scheduler_timer._schedule_once


def test_repeated_requests_wake_the_scheduler_once_per_timespan() -> None:
    scheduler = FakeScheduler()
    for _ in range(50):  # fifty scheduling passes ask for a re-evaluation
        scheduler_timer._schedule_once(scheduler, 0.05)
    assert passes_within(scheduler, 0.3) == 1
    scheduler_timer._schedule_once(scheduler, 0.05)  # after it fired, a new one may start
    assert passes_within(scheduler, 0.3) == 1


def test_an_earlier_deadline_is_not_delayed_by_a_later_pending_one() -> None:
    scheduler = FakeScheduler()
    scheduler_timer._schedule_once(scheduler, 5.0)
    scheduler_timer._schedule_once(scheduler, 0.05)
    assert passes_within(scheduler, 0.5) == 1


def test_snakemakes_own_method_starts_a_timer_per_request() -> None:
    """Negative control: the unpatched method multiplies the passes."""
    scheduler_timer.install()
    original = scheduler_timer.ORIGINAL
    scheduler = FakeScheduler()
    for _ in range(50):
        original(scheduler, 0.05)
    assert passes_within(scheduler, 0.3) == 50


@pytest.mark.parametrize("version, expected", [
    ("9.27.0", True), ("9.27.3", True), ("9.99.1", True), ("9.26.9", False), ("10.0.0", False),
    ("8.30.0", False), ("10.0.0a1", False), ("9.28.0rc1", True),
])
def test_only_tested_versions_count_as_tested(version: str, expected: bool) -> None:
    assert scheduler_timer.tested(version) is expected


def test_an_untested_snakemake_keeps_its_own_method() -> None:
    """Fallback: outside the tested range nothing is replaced."""
    saved = JobScheduler._schedule_reevalutation
    try:
        JobScheduler._schedule_reevalutation = scheduler_timer.ORIGINAL or saved
        own = JobScheduler._schedule_reevalutation
        assert scheduler_timer.install("10.1.0") is False
        assert JobScheduler._schedule_reevalutation is own
        assert scheduler_timer.install() is True  # the installed 9.x is tested
        assert JobScheduler._schedule_reevalutation is scheduler_timer._schedule_once
    finally:
        JobScheduler._schedule_reevalutation = saved
