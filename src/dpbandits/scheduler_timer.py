"""One pending re-evaluation timer for Snakemake's job scheduler, not one per scheduling pass.

Snakemake 9's scheduler re-evaluates after its job-rate timespan (default 1 s) by starting a
`threading.Timer` at the end of every scheduling pass, including the passes those timers
trigger. Every job event therefore starts a chain of timers that never ends: after n events
the main process runs about n passes a second, and over a run of a few hundred jobs it spends
minutes of CPU (a quadratic cost) taken from the simulations. `install()` replaces the method
so that a new timer starts only when none is pending; one pass after the timespan is all the
rate limit needs, since a finishing job wakes the scheduler on its own.

The method is private to Snakemake, so it is replaced only in the Snakemake versions this
project is tested with (`TESTED`); any other version keeps its own method (correct, only
costlier), and `install` says so by returning False.
"""

from __future__ import annotations

import threading
import time
from typing import Any

ORIGINAL: Any = None  # Snakemake's own method, once `install` has replaced it
TESTED = ((9, 27), (10, 0))  # Snakemake versions [from, to) whose scheduler this patches


def tested(version: str) -> bool:
    """Whether a Snakemake version string lies in the tested range."""
    parts = []
    for part in version.split(".")[:2]:
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    low, high = TESTED
    return low <= tuple(parts) < high


def _schedule_once(scheduler: Any, delay: float) -> None:
    """Start the re-evaluation timer unless one that fires as early is already pending."""
    lock = scheduler.__dict__.setdefault("_dpbandits_timer_lock", threading.Lock())
    due = time.monotonic() + delay
    with lock:
        pending = scheduler.__dict__.get("_dpbandits_timer_due")
        if pending is not None and pending <= due:
            return
        scheduler._dpbandits_timer_due = due

    def fire() -> None:
        with lock:
            if scheduler.__dict__.get("_dpbandits_timer_due") == due:
                scheduler._dpbandits_timer_due = None
        scheduler._open_jobs.release()

    timer = threading.Timer(delay, fire)
    timer.daemon = True
    timer.start()


def install(version: str | None = None) -> bool:
    """Patch `JobScheduler._schedule_reevalutation` (idempotent) in a tested Snakemake
    (`version`: the installed one by default); False where it is untested or absent."""
    try:
        from snakemake import __version__
        from snakemake.scheduling.job_scheduler import JobScheduler
    except ImportError:
        return False
    if not tested(__version__ if version is None else version):
        return False
    global ORIGINAL
    method = getattr(JobScheduler, "_schedule_reevalutation", None)
    if method is None:
        return False
    if method is not _schedule_once:
        ORIGINAL = method
        JobScheduler._schedule_reevalutation = _schedule_once
    return True
