"""Helpers of notebooks/explore.ipynb: load every summary and curve of a results folder as tidy
tables and slice them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpbandits.aggregate import load_curves
from dpbandits.config import REPO_ROOT
from dpbandits.paper.results import select

RESULTS_ENV = "DPBANDITS_RESULTS"
SCALES = ("results", "results/smoke")
"""Where the results are looked for, paper scale first."""
CURVE_KEYS = ("regret_mean", "regret_se", "reward_mean", "reward_se")


def repository_root(start: str | Path | None = None) -> Path:
    """The nearest folder holding the Snakefile, from `start` (the working directory) up; else
    the repository this package was installed from."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "Snakefile").is_file():
            return folder
    return REPO_ROOT


def results_dir(root: str | Path | None = None) -> Path:
    """The results folder: $DPBANDITS_RESULTS (a relative path from the repository root), else
    the first of `results/` (paper scale) and `results/smoke/` that holds results."""
    root = repository_root(root)
    chosen = os.environ.get(RESULTS_ENV)
    if chosen:
        return root / chosen
    for folder in SCALES:
        if experiments(root / folder):
            return root / folder
    raise FileNotFoundError(f"no results under {root / SCALES[0]} or {root / SCALES[1]}; run "
                            f"`make smoke` (or `make reproduce`) in {root} first, or set "
                            f"{RESULTS_ENV} to a results folder")


def experiments(folder: str | Path) -> list[str]:
    """Experiments of a results folder that have a summary.csv."""
    return sorted(p.parent.name for p in Path(folder).glob("*/summary.csv"))


def load_summaries(folder: str | Path) -> pd.DataFrame:
    """Every results/<experiment>/summary.csv, one row per trial."""
    frames = [pd.read_csv(Path(folder) / name / "summary.csv") for name in experiments(folder)]
    if not frames:
        raise FileNotFoundError(f"no */summary.csv under {folder}; run snakemake first")
    return pd.concat(frames, ignore_index=True, sort=False)


def load_curve_table(folder: str | Path, experiment: str,
                     max_points: int | None = None) -> pd.DataFrame:
    """Curves of one experiment as a tidy table: one row per (algorithm, ε, instance, t) with
    mean / se of cumulative regret and reward and the running reward per round (at most
    `max_points` evenly spaced checkpoints per curve, the last one kept)."""
    rows = []
    for item in load_curves(Path(folder) / experiment / "curves.h5"):
        t = np.asarray(item["checkpoints"], dtype=float)
        keep = slice(None)
        if max_points is not None and len(t) > max_points:
            keep = np.unique(np.linspace(0, len(t) - 1, max_points).round().astype(int))
        item = {k: (np.asarray(v)[keep] if k in CURVE_KEYS else v) for k, v in item.items()}
        t = t[keep]
        eps = item["epsilon"]
        rows.append(pd.DataFrame({
            "experiment": experiment,
            "algorithm": item["algorithm"],
            "epsilon": np.nan if eps == "none" else float(eps),
            "accounting": item.get("accounting", ""),
            "instance_index": int(item["instance_index"]),
            "t": t,
            "regret_mean": item["regret_mean"],
            "regret_se": item["regret_se"],
            "reward_mean": item["reward_mean"],
            "reward_se": item["reward_se"],
            "running_reward": np.asarray(item["reward_mean"]) / np.maximum(t, 1),
            "n_trials": int(item["n_trials"]),
        }))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()


def slice_results(frame: pd.DataFrame, **where: Any) -> pd.DataFrame:
    """Rows matching every keyword (a list means any of; None matches a missing ε; "max"/"min"
    pick the extreme value), e.g. slice_results(df, experiment="glm_table2", S=3.0)."""
    return select(frame, where)


def final_table(frame: pd.DataFrame, by: tuple[str, ...] = ("experiment", "algorithm",
                                                             "epsilon"),
                metric: str = "regret") -> pd.DataFrame:
    """Mean, standard error and number of trials of `metric` per group."""
    keys = [k for k in by if k in frame.columns]
    grouped = frame.groupby(keys, dropna=False)[metric]
    out = grouped.agg(mean="mean", sd="std", n="count").reset_index()
    out["se"] = out["sd"] / np.sqrt(out["n"])
    return out.drop(columns="sd")
