"""What every benchmark prints next to its figures: CPU model, core count and load."""

from __future__ import annotations

import csv
import os
import platform
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"


def cpu_model() -> str:
    """The `model name` line of /proc/cpuinfo (platform.processor() elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_line() -> str:
    """One line: CPU model, usable cores, 1-minute load average, numpy version."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"CPU: {cpu_model()}; {len(os.sched_getaffinity(0))} cores; load {load:.2f}; "
            f"numpy {np.__version__}")


def write_rows(path: Path, rows: list[dict[str, object]]) -> None:
    """Write benchmark rows as CSV (columns from the first row)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
