"""Small summaries and a toy project (config, results, published file, claims file) for the
paper-layer tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from dpbandits.paper.published import load_claims_file, load_published
from dpbandits.paper.reproduction import Reproduction, build
from dpbandits.paper.results import load_claim_tables, load_summaries

SEED = 4242


def frame(groups: dict[tuple, np.ndarray], horizon: int = 1000) -> pd.DataFrame:
    """Tidy summary rows: key (algorithm, epsilon, S) → per-trial regret (trial i = seed i)."""
    rows = []
    s_values = sorted({k[2] for k in groups})
    for (algorithm, eps, s), values in groups.items():
        for seed, value in enumerate(values):
            rows.append({"experiment": "unit", "algorithm": algorithm, "policy": algorithm,
                         "accounting": "strict", "epsilon": np.nan if eps is None else eps,
                         "instance_index": s_values.index(s), "S": s, "T": horizon,
                         "seed": seed, "regret": float(value), "mean_reward": 0.5,
                         "kappa": 10.0 * s})
    return pd.DataFrame(rows)


def write_project(root: Path, horizon: int = 1000, published_horizon: int = 1000) -> dict:
    """Config, results, published file and claims file of one toy experiment."""
    rng = np.random.default_rng(SEED)
    rows = []
    for algorithm, eps, center in (("Base", None, 100.0), ("Priv", 4.0, 300.0),
                                   ("Extra", None, 50.0)):
        for s_index, s in enumerate((2.0, 3.0)):
            for seed in range(10):
                rows.append({"experiment": "toy", "algorithm": algorithm, "policy": algorithm,
                             "accounting": "paper", "epsilon": np.nan if eps is None else eps,
                             "instance_index": s_index, "S": s, "T": horizon, "seed": seed,
                             "regret": center * s / 2 + rng.normal(0, 5), "mean_reward": 0.5,
                             "kappa": 10 * s})
    (root / "results" / "toy").mkdir(parents=True)
    pd.DataFrame(rows).to_csv(root / "results" / "toy" / "summary.csv", index=False)
    (root / "published").mkdir()
    (root / "published" / "fam.yaml").write_text(yaml.safe_dump({
        "tab": {"source": "Table 9", "column": "S", "horizon": published_horizon,
                "values": {"Base": {2.0: 100.0, 3.0: 150.0},   # matches ours
                           "Priv ε=4": {2.0: 300.0, 3.0: 900.0},  # S = 3 is off by 2x
                           "Gone": {2.0: 1.0}},                   # never run
                "claims": [{"id": "c", "text": "Base below Priv"}, {"text": "uncovered claim"}],
                "rows": {1: {"np": 80.4}}},
        "other": {"source": "Figure 1", "horizon": 5, "values": {"Base": 1.0}},
    }, allow_unicode=True))
    (root / "claims.yaml").write_text(yaml.safe_dump({
        "agreement": [{"published": "fam:tab", "algorithms": ["Priv*"],
                       "rule": {"kind": "relative", "tolerance": 0.1},
                       "basis": "docs/reproduction.md", "note": "known deviation"}],
        "claims": [
            {"id": "base_below_priv", "paper": "glm", "text": "Base below Priv",
             "experiment": "toy", "horizon": published_horizon,
             "comparison": {"kind": "less", "a": {"algorithm": "Base"},
                            "b": {"algorithm": "Priv", "epsilon": 4}, "for_each": "S"},
             "covers": "fam:tab#c"},
            {"id": "row_np", "paper": "glm", "text": "the np row", "experiment": "toy",
             "horizon": published_horizon, "metric": "mean_reward",
             "comparison": {"kind": "between", "select": {"algorithm": "Base", "S": 2.0},
                            "low": 0.4, "high": 0.6},
             "covers": "fam:tab@rows/1"},
            {"id": "extra_low", "paper": "glm", "text": "Extra has the lowest regret",
             "experiment": "toy", "horizon": published_horizon,
             "comparison": {"kind": "less", "a": {"algorithm": "Extra", "S": 2.0},
                            "b": {"algorithm": "Base", "S": 2.0}}},
        ],
    }, allow_unicode=True))
    return {"results": "results", "paper": "paper", "experiments": {"toy": {
        "group": "synthetic", "paper": "glm", "instance_grid": {"S": [2.0, 3.0]},
        "outputs": [{"kind": "final_regret_table", "published": "fam:tab"}]}}}


def build_project(root: Path, config: dict) -> Reproduction:
    """The report of a toy project, from the files a rule would declare as inputs."""
    return build(config, load_summaries(config, sorted(root.glob("results/*/summary.csv"))),
                 load_claim_tables(config, sorted(root.glob("paper/tables/*claims.csv"))),
                 load_published(sorted((root / "published").glob("*.yaml"))),
                 load_claims_file(root / "claims.yaml"))


def build_toy(root: Path, **kw) -> Reproduction:
    """Write the toy project and build its report."""
    return build_project(root, write_project(root, **kw))
