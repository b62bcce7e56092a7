"""Results of earlier code states of this project next to this run's (paper/earlier.yaml).

A group holds values measured with an earlier commit (e.g. before a privacy fix); the report
shows each next to this run's mean ± s.e. for the same experiment, algorithm, ε and instance,
with the difference in standard errors of the difference. A run at another horizon is not
comparable; a cell without results is not run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from dpbandits import stats
from dpbandits.paper.results import NotComparable, metric_values, select

KEYS = ("experiment", "horizon", "epsilon", "mean", "se")


def load_earlier(path: str | Path) -> list[dict[str, Any]]:
    """The groups of an earlier-results file ([] when it does not exist)."""
    path = Path(path)
    if not path.is_file():
        return []
    groups = yaml.safe_load(path.read_text()) or []
    for group in groups:
        for row in group["rows"]:
            missing = [k for k in KEYS if k not in row]
            if missing:
                raise ValueError(f"{path}: row {row} lacks {', '.join(missing)}")
    return groups


def _grid(row: dict[str, Any]) -> dict[str, Any]:
    """The instance-grid keys of a row (everything that is not a fixed key)."""
    return {k: v for k, v in row.items() if k not in KEYS}


def compare_row(algorithm: str, row: dict[str, Any],
                summaries: Mapping[str, pd.DataFrame | None],
                resolution: float = 0.0) -> dict[str, Any]:
    """One earlier value with this run's value of the same cell and a status (`resolution`:
    the rounding of the recorded values, a floor on the spread of the difference)."""
    out = {"experiment": row["experiment"], "algorithm": algorithm, "epsilon": row["epsilon"],
           "grid": " ".join(f"{k}={v}" for k, v in _grid(row).items()),
           "before": row["mean"], "before_se": row["se"], "now": None, "now_se": None, "n": 0,
           "z": None, "status": "not run"}
    summary = summaries.get(row["experiment"])
    if summary is None:
        return out
    where = {"algorithm": algorithm, "epsilon": row["epsilon"], **_grid(row)}
    try:
        rows = select(summary, where)
        values = metric_values(rows, "regret").dropna().to_numpy(float)
    except NotComparable as exc:
        return {**out, "status": f"not comparable: {exc}"}
    if not len(values):
        return out
    horizon = int(rows["T"].max())
    if horizon != int(row["horizon"]):
        return {**out, "status": f"not comparable: T = {horizon}, earlier T = {row['horizon']}"}
    now, now_se = float(values.mean()), float(stats.standard_error(values))
    spread = max(math.hypot(float(row["se"]), now_se), resolution)
    z = (now - float(row["mean"])) / spread if spread > 0 else None
    return {**out, "now": now, "now_se": now_se, "n": len(values), "z": z, "status": "compared"}


def compare_earlier(groups: list[dict[str, Any]],
                    summaries: Mapping[str, pd.DataFrame | None]) -> list[dict[str, Any]]:
    """Every group with its rows compared to this run."""
    return [{**{k: v for k, v in group.items() if k != "rows"},
             "rows": [compare_row(group["algorithm"], row, summaries,
                                  float(group.get("resolution", 0.0)))
                      for row in group["rows"]]}
            for group in groups]
