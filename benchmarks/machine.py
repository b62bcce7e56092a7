"""What every benchmark prints next to its figures: CPU model, core count and load."""

from __future__ import annotations

import csv
import os
import platform
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"


def cpu_model() -> str:
    """The `model name` line of /proc/cpuinfo with the CPU family, model and whether it has
    AVX-512 (a virtual machine's name alone, e.g. "AMD EPYC", covers CPUs of several
    generations); platform.processor() elsewhere."""
    try:
        first_cpu = Path("/proc/cpuinfo").read_text().split("\n\n", 1)[0].splitlines()
    except OSError:
        first_cpu = []
    fields = {key.strip(): value.strip() for key, value in
              (line.split(":", 1) for line in first_cpu if ":" in line)}
    if "model name" not in fields:
        return platform.processor() or "unknown"
    vector = "AVX-512" if "avx512f" in fields.get("flags", "").split() else "no AVX-512"
    return (f"{fields['model name']} (family {fields.get('cpu family', '?')}, "
            f"model {fields.get('model', '?')}, {vector})")


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
