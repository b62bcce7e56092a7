"""What a reader sees in the figures: one colour per algorithm across experiments, 95 % t-interval
bands and error bars, plain ε ticks, NP% defined, bars for one-parameter grids, and the
smoke-scale mark on figures and tables of a run at another horizon than the paper's."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgb
from matplotlib.container import ErrorbarContainer
from matplotlib.patches import Rectangle
from PIL import Image
from scipy import stats
from test_linear_outputs import SCALE
from test_linear_outputs import summary as linear_summary
from test_ts_outputs import EXP, base_rewards, summary_frame

from dpbandits.config import grid_columns
from dpbandits.outputs import get_output, make_outputs
from dpbandits.paper.published import load_published
from dpbandits.plots import MARK_COLOR
from dpbandits.scale import paper_config

from conftest import REPO, SMOKE_PAPER

PUBLISHED = load_published((REPO / "paper" / "published").glob("*.yaml"))
GLM_T = paper_config()["experiments"]["glm_table2"]["instance"]["horizon"]


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> list[plt.Figure]:
    """Every figure save_figure closes during the test, in order."""
    closed: list[plt.Figure] = []
    close = plt.close

    def keep(fig=None):  # noqa: ANN001, ANN202
        closed.append(fig)
        close(fig)

    monkeypatch.setattr(plt, "close", keep)
    return closed


def _curve(algorithm: str, epsilon: str = "none", accounting: str = "strict") -> dict:
    t = np.arange(1, 11)
    return {"algorithm": algorithm, "epsilon": epsilon, "instance_index": 0,
            "instance": {"S": 2.0}, "accounting": accounting, "checkpoints": t, "n_trials": 4,
            "regret_mean": np.sqrt(t), "regret_se": 0.1 * np.ones(10),
            **{f"regret_q{q}": np.sqrt(t) for q in (25, 50, 75)}}


def _glm_summary(horizon: int) -> pd.DataFrame:
    return pd.DataFrame({"instance_index": [0], "kappa": [10.0], "T": [horizon], "S": [2.0],
                         "seed": [0]})


def _line_colors(fig: plt.Figure) -> dict[str, tuple]:
    return {line.get_label(): to_rgb(line.get_color()) for ax in fig.get_axes()
            for line in ax.get_lines()}


def _marks(fig: plt.Figure) -> list[str]:
    return [t.get_text() for t in fig.texts if t.get_gid() == "scale-mark"]


def test_an_algorithm_has_one_colour_in_the_figures_of_two_experiments(tmp_path, figures):
    """glm_table2 and glm_fig1_logistic show different sets of algorithms."""
    config = paper_config()
    for name, labels in (("glm_table2", ["GLM-UCB", "GLOC", "RS-GLinUCB (C)"]),
                         ("glm_fig1_logistic", ["ECOLog", "GLOC", "Private-GLM (strict)"])):
        exp = {**config["experiments"][name], "outputs": [{"kind": "regret_curves"}]}
        make_outputs(name, exp, _glm_summary(GLM_T), [_curve(a) for a in labels], tmp_path,
                     config=config)
    first, second = (_line_colors(f) for f in figures)
    assert first["GLOC"] == second["GLOC"]
    assert len({*first.values(), *second.values()}) == 5


def test_a_smoke_scale_run_is_marked_on_its_figures_and_tables(tmp_path, figures):
    exp = {**paper_config()["experiments"]["glm_table2"],
           "outputs": [{"kind": "regret_curves"}]}
    make_outputs("glm_table2", exp, _glm_summary(300), [_curve("GLOC")], tmp_path / "smoke")
    make_outputs("glm_table2", exp, _glm_summary(GLM_T), [_curve("GLOC")], tmp_path / "paper")
    note = f"SMOKE SCALE, NOT COMPARABLE: T = 300, PAPER T = {GLM_T}"
    assert _marks(figures[0]) == [note] and _marks(figures[1]) == []


def test_tables_of_a_smoke_scale_run_say_so_and_show_no_differences(tmp_path):
    rewards = base_rewards()
    data = summary_frame(rewards).assign(T=300)
    spec = {"kind": "ts_group_privacy", "method": "AdaPrivate-TS (k)", "reference": "LinTS",
            "published": "ts:group_privacy"}
    for folder, horizon in (("smoke", 300), ("paper", 10000)):
        make_outputs("ts_group_privacy", {**EXP, "outputs": [spec]}, data.assign(T=horizon),
                     [], tmp_path / folder, PUBLISHED)
    smoke = (tmp_path / "smoke" / "tables" / "ts_group_privacy_group_privacy.md").read_text()
    paper = (tmp_path / "paper" / "tables" / "ts_group_privacy_group_privacy.md").read_text()
    assert smoke.startswith("SMOKE SCALE, NOT COMPARABLE: T = 300, PAPER T = 10000. ")
    assert not paper.startswith("SMOKE")
    table = pd.read_csv(tmp_path / "smoke" / "tables" / "ts_group_privacy_group_privacy.csv")
    assert set(table["|NP% − pub|"]) == {"not comparable"}
    assert pd.read_csv(tmp_path / "paper" / "tables" / "ts_group_privacy_group_privacy.csv")[
        "|NP% − pub|"].dtype.kind == "f"


def _half(data: pd.DataFrame, algorithm: str, eps: float) -> float:
    regret = data[(data["algorithm"] == algorithm) & (data["epsilon"] == eps)]["regret"]
    return stats.t.ppf(0.975, len(regret) - 1) * regret.std(ddof=1) / np.sqrt(len(regret))


def test_regret_vs_epsilon_has_plain_ticks_and_95_percent_t_intervals(tmp_path, figures):
    data = linear_summary(SCALE).assign(accounting="paper")
    get_output("regret_vs_epsilon").make("lin", {}, data, [], tmp_path)
    (fig,) = figures
    ax = fig.get_axes()[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.1", "1", "100"]
    assert not [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text()]
    assert all(t.get_text().replace(".", "").isdigit() for t in ax.get_yticklabels())
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[0] == "NP (non-private)"
    assert legend[-1] == "shaded: 95 % t-interval of the mean over trials"
    assert "C, paper accounting" in legend
    central = data[(data["algorithm"] == "C") & (data["epsilon"] == 0.1)]["regret"]
    tops = [c.get_paths()[0].vertices[:, 1].max() for c in ax.collections]
    assert central.mean() + _half(data, "C", 0.1) in [pytest.approx(t) for t in tops]


def _errorbars(ax) -> list[ErrorbarContainer]:  # noqa: ANN001
    return [c for c in ax.containers if isinstance(c, ErrorbarContainer)]


def test_table1_figure_has_error_bars_plain_eps_ticks_and_defines_np(tmp_path, figures):
    data = summary_frame(base_rewards())
    get_output("ts_table1").make("x", EXP, data, [], tmp_path, reference="LinTS")
    (fig,) = figures
    ax = fig.get_axes()[0]
    assert _errorbars(ax)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "5"]
    assert ax.get_ylabel().startswith("NP% = 100 · reward / reward of LinTS")
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "LinTS (reference)" in texts and "dotted, open: best grid cell" in texts
    assert any(t.startswith("uniform random choice (") for t in texts)


ROBUST = {
    "instance": EXP["instance"],
    "algorithms": [
        {"label": "LinTS", "policy": "LinTS"},
        {"label": "AdaPrivate-TS (B grid)", "policy": "AdaPrivate-TS",
         "grid": {"B": [100, 300]}},
        {"label": "AdaPrivate-TS-Adaptive (decay grid)", "policy": "AdaPrivate-TS-Adaptive",
         "grid": {"v0": [1.0, 1.5], "gamma": [0.95]}},
    ],
}


def _robust_summary() -> pd.DataFrame:
    cols = grid_columns({"experiments": {"x": ROBUST}}, "x")
    rows = []
    g = np.random.default_rng(1)
    for label in ["LinTS", *cols]:
        for seed in range(6):
            rows.append({"algorithm": label, "policy": label.split(" [")[0].split(" (")[0],
                         "grid_of": label.split(" [")[0], "epsilon": np.nan if label == "LinTS"
                         else 1.0, "instance_index": 0, "seed": seed, "accounting": "strict",
                         "expected_reward": 100.0 if label == "LinTS" else 95 + g.normal(),
                         "random_reward": 50.0, "regret": 0.0, **cols.get(label, {})})
    return pd.DataFrame(rows)


def test_a_grid_is_points_with_error_bars_on_an_axis_that_shows_the_differences(
        tmp_path, figures):
    get_output("ts_robustness").make("x", ROBUST, _robust_summary(), [], tmp_path)
    (fig,) = figures
    for ax in fig.get_axes():
        assert not [p for p in ax.patches if isinstance(p, Rectangle) and p.get_height() > 0]
        (bars,) = _errorbars(ax)
        assert len(bars.lines[0].get_xdata()) == 2
        # NP% about 95 here, uniform random 50: the axis starts at that floor, not at 0
        assert 40 < ax.get_ylim()[0] <= 50
        assert "strict accounting" in ax.get_title()
    assert fig.get_axes()[1].get_xlabel() == "v0"
    assert "gamma = 0.95" in fig.get_axes()[1].get_title()
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "uniform random choice (50.0)" in texts  # random_reward 50 of the reference's 100


def test_ablation_points_with_error_bars_name_each_rows_accounting(tmp_path, figures):
    data = summary_frame(base_rewards())
    get_output("ts_ablation").make("x", EXP, data, [], tmp_path, reference="LinTS",
                                   rows=["AdaPrivate-UCB", "AdaPrivate-TS [v=1.0]"])
    (fig,) = figures
    ax = fig.get_axes()[0]
    assert len(_errorbars(ax)) == 2
    assert "error bars: 95 % t-interval" in " ".join(
        t.get_text() for t in fig.legends[0].get_texts())
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "AdaPrivate-UCB\n(strict accounting)", "AdaPrivate-TS [v=1.0]\n(strict accounting)"]


def test_every_figure_of_the_smoke_run_carries_the_mark(smoke_run: Path):
    """The red band above each PNG of `config/smoke.yaml` (dpbandits.plots.MARK_COLOR)."""
    pngs = sorted((smoke_run / SMOKE_PAPER / "figures").glob("*.png"))
    assert len(pngs) >= 10
    red = np.array(to_rgb(MARK_COLOR)) * 255
    for png in pngs:
        pixels = np.asarray(Image.open(png).convert("RGB"), dtype=float)
        top = pixels[: max(60, pixels.shape[0] // 8)]
        assert (np.abs(top - red).sum(axis=2) < 40).sum() > 300, png.name
