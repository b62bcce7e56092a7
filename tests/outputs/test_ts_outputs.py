"""AdaPrivate-TS tables and figures: NP%, default/tuned grid cells, paired tests, file sets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpbandits.config import grid_columns
from dpbandits.outputs import get_output, output_files
from dpbandits.outputs.ts import default_labels, grid_cells, trial_metrics
from dpbandits.paper.published import load_published, published_entry

from conftest import REPO

PUBLISHED = load_published((REPO / "paper" / "published").glob("*.yaml"))

INSTANCE = {"generator": "logistic_pool", "d": 4, "n_arms": 10, "K": 3, "horizon": 50,
            "seed": 3}
EXP = {
    "instance": INSTANCE,
    "algorithms": [
        {"label": "LinTS", "policy": "LinTS"},
        {"label": "AdaPrivate-TS", "policy": "AdaPrivate-TS", "grid": {"v": [0.5, 1.0]}},
        {"label": "AdaPrivate-TS", "policy": "AdaPrivate-TS", "grid": {"B": [100]}},
        {"label": "AdaPrivate-UCB", "policy": "AdaPrivate-UCB"},
        {"label": "AdaPrivate-TS (k)", "policy": "AdaPrivate-TS",
         "grid": {"group_size": [1, 5]}},
    ],
}
SEEDS = 6


def summary_frame(rewards: dict[tuple[str, float], list[float]]) -> pd.DataFrame:
    cols = grid_columns({"experiments": {"x": EXP}}, "x")
    rows = []
    for (label, eps), values in rewards.items():
        for seed, value in enumerate(values):
            rows.append({"algorithm": label, "policy": label.split(" [")[0].split(" (")[0],
                         "epsilon": eps, "instance_index": 0, "seed": seed,
                         "accounting": "strict", "expected_reward": value,
                         "random_reward": 50.0, "regret": 0.0, "rho": 0.45, "sigma": 1.05,
                         "group_size": 5.0 if "group_size=5" in label else 1.0,
                         **cols.get(label, {})})
    return pd.DataFrame(rows)


def base_rewards() -> dict[tuple[str, float], list[float]]:
    g = np.random.default_rng(0)
    ref = [100.0] * SEEDS
    return {
        ("LinTS", np.nan): ref,
        ("AdaPrivate-TS [v=0.5]", 1.0): list(95 + g.normal(0, 1, SEEDS)),
        ("AdaPrivate-TS [v=1.0]", 1.0): list(96 + g.normal(0, 1, SEEDS)),
        ("AdaPrivate-TS [B=100]", 1.0): list(97 + g.normal(0, 1, SEEDS)),
        ("AdaPrivate-UCB", 1.0): list(94 + g.normal(0, 1, SEEDS)),
        ("AdaPrivate-TS (k) [group_size=1]", 5.0): [90.0 + s for s in range(SEEDS)],
        ("AdaPrivate-TS (k) [group_size=5]", 5.0): [80.0 + s for s in range(SEEDS)],
    }


def test_np_percent_and_default_and_tuned_cells() -> None:
    summary = summary_frame(base_rewards())
    metrics = trial_metrics(EXP, summary, reference="LinTS")
    ts = metrics[metrics["algorithm"] == "AdaPrivate-TS [v=1.0]"]
    np.testing.assert_allclose(ts["np"], ts["expected_reward"])  # reference reward is 100
    np.testing.assert_allclose(ts["np_norm"], 100 * (ts["expected_reward"] - 50) / 50)
    assert default_labels(EXP)["AdaPrivate-TS"] == "AdaPrivate-TS [v=1.0]"
    cells = grid_cells(EXP, metrics)
    ts_cells = cells[cells["method"] == "AdaPrivate-TS"].set_index("label")
    assert ts_cells.loc["AdaPrivate-TS [v=1.0]", "default"] and ts_cells["default"].sum() == 1
    assert ts_cells.loc["AdaPrivate-TS [B=100]", "tuned"]
    assert ts_cells["tuned"].sum() == 1


def test_tuned_ties_go_to_the_earlier_grid_value() -> None:
    rewards = base_rewards()
    rewards[("AdaPrivate-TS [v=0.5]", 1.0)] = [99.0] * SEEDS
    rewards[("AdaPrivate-TS [v=1.0]", 1.0)] = [99.0] * SEEDS
    rewards[("AdaPrivate-TS [B=100]", 1.0)] = [99.0] * SEEDS
    cells = grid_cells(EXP, trial_metrics(EXP, summary_frame(rewards), "LinTS"))
    winner = cells[(cells["method"] == "AdaPrivate-TS") & cells["tuned"]]["label"].tolist()
    assert winner == ["AdaPrivate-TS [v=0.5]"]


def test_table1_files_and_paired_test(tmp_path) -> None:
    summary = summary_frame(base_rewards())
    opts = {"reference": "LinTS", "comparisons": [{"a": "AdaPrivate-TS", "b": "AdaPrivate-UCB"}]}
    kind = get_output("ts_table1")
    written = kind.make("x", EXP, summary, [], tmp_path, **opts)
    expected = {tmp_path / f for f in output_files("x", {"kind": "ts_table1", **opts})}
    assert expected == set(written) and all(p.exists() for p in written)
    tests = pd.read_csv(tmp_path / "tables" / "x_tests.csv")
    a = summary[summary["algorithm"] == "AdaPrivate-TS [v=1.0]"]["expected_reward"]
    b = summary[summary["algorithm"] == "AdaPrivate-UCB"]["expected_reward"]
    p = stats.ttest_rel(a.to_numpy(), b.to_numpy()).pvalue
    assert tests["Δ NP% (pp)"].iloc[0] == pytest.approx(round((a.to_numpy() - b.to_numpy())
                                                              .mean(), 2))
    assert float(tests["p"].iloc[0]) == pytest.approx(p, rel=0.05)
    table = (tmp_path / "tables" / "x_table1.md").read_text()
    assert "[B=100]" in table  # the winning setting is named


def test_group_privacy_table(tmp_path) -> None:
    summary = summary_frame(base_rewards())
    kind = get_output("ts_group_privacy")
    kind.make("x", EXP, summary, [], tmp_path, method="AdaPrivate-TS (k)", reference="LinTS",
              published=published_entry(PUBLISHED, "ts:group_privacy"))
    table = pd.read_csv(tmp_path / "tables" / "x_group_privacy.csv")
    assert table["k"].tolist() == [1, 5]
    assert table["published NP%"].tolist() == [80.4, 26.0]
    assert table["NP%"].iloc[0].startswith("92.5")


def test_missing_reference_is_a_config_error() -> None:
    from dpbandits.errors import ConfigError

    with pytest.raises(ConfigError, match="reference algorithm 'LinUCB'"):
        trial_metrics(EXP, summary_frame(base_rewards()), reference="LinUCB")


def test_reference_rewards_rebuilt_from_the_instance() -> None:
    """Without recorded expected rewards, Σ best and Σ uniform come from the environment."""
    summary = summary_frame(base_rewards()).drop(columns=["expected_reward", "random_reward"])
    metrics = trial_metrics(EXP, summary, reference="LinTS")
    from dpbandits.instances.registry import build_instance

    env = build_instance(dict(INSTANCE)).environment(2)
    row = metrics[(metrics["algorithm"] == "LinTS") & (metrics["seed"] == 2)].iloc[0]
    assert row["expected_reward"] == pytest.approx(env.sum_best)
    assert row["random_reward"] == pytest.approx(env.sum_uniform)
