"""One pending re-evaluation timer for Snakemake's job scheduler, not one per scheduling pass.

Snakemake 9's scheduler re-evaluates after its job-rate timespan (default 1 s) by starting a
`threading.Timer` at the end of every scheduling pass, including the passes those timers
trigger. Every job event therefore starts a chain of timers that never ends: after n events
the main process runs about n passes a second, and over a run of a few hundred jobs it spends
minutes of CPU (a quadratic cost) taken from the simulations. `install()` replaces the method
so that a new timer starts only when none is pending; one pass after the timespan is all the
rate limit needs, since a finishing job wakes the scheduler on its own.
"""

from __future__ import annotations

import threading
import time
from typing import Any

ORIGINAL: Any = None  # Snakemake's own method, once `install` has replaced it


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


def install() -> bool:
    """Patch `JobScheduler._schedule_reevalutation` (idempotent); False where it is absent."""
    try:
        from snakemake.scheduling.job_scheduler import JobScheduler
    except ImportError:
        return False
    global ORIGINAL
    method = getattr(JobScheduler, "_schedule_reevalutation", None)
    if method is None:
        return False
    if method is not _schedule_once:
        ORIGINAL = method
        JobScheduler._schedule_reevalutation = _schedule_once
    return True
