"""Our results as the paper layer reads them: summaries and claims tables, trial selection."""

from __future__ import annotations

import pandas as pd
import pytest

from dpbandits.paper.results import (
    NotComparable,
    load_claim_tables,
    load_summaries,
    select,
    trial_values,
)

from paper_helpers import frame


def test_load_summaries_by_experiment_folder(tmp_path):
    df = frame({("A", None, 2.0): [1, 2]})
    (tmp_path / "one").mkdir()
    df.to_csv(tmp_path / "one" / "summary.csv", index=False)
    config = {"experiments": {"one": {}, "two": {}}}
    out = load_summaries(config, [tmp_path / "one" / "summary.csv"])
    assert list(out) == ["one", "two"] and out["two"] is None
    assert out["one"]["regret"].tolist() == [1.0, 2.0]


def test_load_claim_tables_keeps_tables_with_a_verdict(tmp_path):
    config = {"experiments": {
        "lin": {"outputs": [{"kind": "linear_claims", "published": "linear:fig2"}]},
        "other": {"outputs": [{"kind": "linear_claims", "published": "linear:fig2"}]},
        "none": {"outputs": [{"kind": "regret_vs_epsilon"}]}}}
    pd.DataFrame({"claim": ["c"], "verdict": ["supported"]}).to_csv(
        tmp_path / "lin_claims.csv", index=False)
    pd.DataFrame({"claim": ["c"]}).to_csv(tmp_path / "other_claims.csv", index=False)
    tables = load_claim_tables(config, [tmp_path / "lin_claims.csv",
                                        tmp_path / "other_claims.csv"])
    assert list(tables) == ["lin"] and tables["lin"]["verdict"].tolist() == ["supported"]


def test_select_lists_missing_epsilon_and_extremes():
    df = frame({("A", None, 2.0): [1, 2], ("B", 1.0, 2.0): [3, 4], ("B", 8.0, 2.0): [5, 6],
                ("B", 8.0, 3.0): [7, 8]})
    assert set(select(df, {"algorithm": ["A", "B"], "S": 3.0})["regret"]) == {7, 8}
    assert set(select(df, {"epsilon": None})["algorithm"]) == {"A"}
    assert set(select(df, {"algorithm": "B", "epsilon": "max", "S": 2.0})["regret"]) == {5, 6}
    assert set(select(df, {"algorithm": "B", "epsilon": "min"})["regret"]) == {3, 4}
    with pytest.raises(NotComparable, match="column 'q'"):
        select(df, {"q": 0.3})


def test_select_reads_grid_parameter_columns():
    df = frame({("A", 1.0, 2.0): [1, 2, 3]}).assign(param_q=[0.1, 0.3, 0.3])
    assert len(select(df, {"q": 0.3})) == 2


def test_ambiguous_selection_is_not_comparable():
    df = frame({("P", 4.0, 2.0): [1, 2], ("P", 8.0, 2.0): [3, 4]})
    with pytest.raises(NotComparable, match="several rows per trial"):
        trial_values(df, {"algorithm": "P"}, "regret")


def test_pick_best_keeps_the_best_grid_cell():
    df = pd.concat([frame({("TS [v=1]", 1.0, 2.0): [10, 11]}),
                    frame({("TS [v=2]", 1.0, 2.0): [20, 21]})]).assign(grid_of="TS")
    low = trial_values(df, {"grid_of": "TS", "pick": "best"}, "regret")
    high = trial_values(df, {"grid_of": "TS", "pick": "best"}, "mean_reward")
    assert list(low) == [10, 11]  # lower regret is better
    assert len(high) == 2
