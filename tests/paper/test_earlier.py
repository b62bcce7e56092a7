"""Earlier code states next to this run: compared, not comparable at another T, not run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpbandits.paper.earlier import compare_earlier, load_earlier
from dpbandits.paper.render import earlier_rows, render_markdown
from dpbandits.paper.reproduction import Reproduction

from conftest import REPO

GROUP = {"title": "t", "commit": "abc1234", "change": "c", "measured": "m",
         "algorithm": "Alg (strict)", "resolution": 0.1,
         "rows": [{"experiment": "e", "horizon": 100, "S": 2.0, "epsilon": 4, "mean": 10.0,
                   "se": 1.0},
                  {"experiment": "missing", "horizon": 100, "epsilon": 4, "mean": 1.0,
                   "se": 0.1}]}


def summary(values: list[float], horizon: int = 100) -> pd.DataFrame:
    return pd.DataFrame({"algorithm": "Alg (strict)", "epsilon": 4.0, "S": 2.0,
                         "instance_index": 0, "seed": range(len(values)), "regret": values,
                         "T": horizon})


def test_a_cell_is_compared_in_standard_errors_of_the_difference():
    values = [11.0, 13.0, 12.0, 14.0]
    row = compare_earlier([GROUP], {"e": summary(values)})[0]["rows"][0]
    se = np.std(values, ddof=1) / 2
    assert row["status"] == "compared" and row["n"] == 4
    assert row["z"] == pytest.approx((12.5 - 10.0) / np.hypot(1.0, se))


def test_another_horizon_is_not_comparable_and_no_results_is_not_run():
    rows = compare_earlier([GROUP], {"e": summary([1.0, 2.0], horizon=300)})[0]["rows"]
    assert rows[0]["status"].startswith("not comparable: T = 300")
    assert rows[0]["now"] is None and rows[1]["status"] == "not run"


def test_the_rounding_of_recorded_values_bounds_the_difference_from_below():
    flat = dict(GROUP, rows=[dict(GROUP["rows"][0], se=0.0, mean=5.0)])
    row = compare_earlier([flat], {"e": summary([5.04, 5.04])})[0]["rows"][0]
    assert row["z"] == pytest.approx(0.4)  # 0.04 / resolution 0.1, not 0.04 / 0


def test_the_shipped_file_loads_and_renders_as_a_report_section():
    groups = load_earlier(REPO / "paper" / "earlier.yaml")
    assert groups and all(g["rows"] for g in groups)
    rep = Reproduction(earlier=compare_earlier(groups, {}))
    text = render_markdown(rep)
    assert f"## Earlier code state: {groups[0]['title']}" in text
    assert len(earlier_rows(rep.earlier[0])) == len(groups[0]["rows"])
