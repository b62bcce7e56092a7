"""Generic regret-curve figure: every series readable (own colour or shade, style, legend)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgb
from scipy import stats

from dpbandits.outputs import common


def _curve(algorithm: str, epsilon: str, index: int, accounting: str = "strict") -> dict:
    t = np.arange(1, 11)
    return {"algorithm": algorithm, "epsilon": epsilon, "instance_index": index,
            "instance": {"S": 2.0 + index}, "accounting": accounting, "checkpoints": t,
            "n_trials": 5,
            "regret_mean": np.sqrt(t) * (1 + index), "regret_se": 0.1 * np.ones(10)}


@pytest.fixture
def figure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    captured = {}

    def keep(fig, stem):
        captured["fig"] = fig
        return []

    monkeypatch.setattr(common, "save_figure", keep)
    curves = [_curve(a, e, i, acc) for i in (0, 1)
              for a, e, acc in [("GLOC", "none", "strict"), ("RS-GLinUCB (T2)", "none", "strict"),
                                ("RS-GLinUCB (C)", "none", "strict")]
              + [("Private-GLM", e, "paper") for e in ("2", "4", "8", "10")]
              + [("Private-GLM (strict)", e, "strict") for e in ("2", "4", "8", "10")]]
    summary = pd.DataFrame({"instance_index": [0, 1], "kappa": [18.4, 56.4]})
    common.regret_curves("exp", {}, summary, curves, tmp_path, facet="S", epsilons=[2, 8, 10])
    return captured["fig"]


def test_one_panel_per_instance_and_one_y_label(figure) -> None:
    axes = figure.get_axes()
    assert [ax.get_title() for ax in axes] == ["exp, S = 2.0 (κ = 18.40)",
                                               "exp, S = 3.0 (κ = 56.40)"]
    assert [ax.get_ylabel() for ax in axes] == ["mean cumulative regret", ""]


def test_every_series_has_its_own_colour_and_paper_accounting_is_dashed(figure) -> None:
    lines = {line.get_label(): line for line in figure.get_axes()[0].get_lines()}
    assert sorted(lines) == sorted(
        ["GLOC", "RS-GLinUCB (T2)", "RS-GLinUCB (C)"]
        + [f"Private-GLM, ε={e}" for e in (2, 8, 10)]
        + [f"Private-GLM (strict), ε={e}" for e in (2, 8, 10)])
    colors = [to_rgb(line.get_color()) for line in lines.values()]
    assert len(set(colors)) == len(colors)
    assert {lines[f"Private-GLM, ε={e}"].get_linestyle() for e in (2, 8, 10)} == {"--"}
    assert lines["Private-GLM (strict), ε=2"].get_linestyle() == "-"


def test_larger_epsilon_is_drawn_darker(figure) -> None:
    lines = {line.get_label(): line for line in figure.get_axes()[0].get_lines()}
    for name in ("Private-GLM", "Private-GLM (strict)"):
        brightness = [sum(to_rgb(lines[f"{name}, ε={e}"].get_color())) for e in (2, 8, 10)]
        assert brightness == sorted(brightness, reverse=True) and len(set(brightness)) == 3


def test_legend_lists_each_series_once_and_explains_bands_and_dashes(figure) -> None:
    (legend,) = [ax.get_legend() for ax in figure.get_axes() if ax.get_legend()]
    texts = [t.get_text() for t in legend.get_texts()]
    assert len(texts) == len(set(texts)) == 11
    assert texts[-2] == "shaded: 95 % t-interval of the mean over trials (n = 5)"
    assert texts[-1] == "dashed: paper accounting"


def test_band_is_the_95_percent_t_interval(figure) -> None:
    """Half-width t_{0.975, 4} · s.e. for 5 trials (s.e. 0.1 in the fixture)."""
    band = figure.get_axes()[0].collections[0].get_paths()[0].vertices[:, 1]
    mean = np.sqrt(np.arange(1, 11))
    half = stats.t.ppf(0.975, 4) * 0.1
    assert band.max() == pytest.approx(mean.max() + half)
    assert band.min() == pytest.approx(mean.min() - half)


def test_a_later_variant_has_markers_and_the_first_none(figure) -> None:
    lines = {line.get_label(): line for line in figure.get_axes()[0].get_lines()}
    assert lines["RS-GLinUCB (T2)"].get_marker() in ("None", None, "")
    assert lines["RS-GLinUCB (C)"].get_marker() not in ("None", None, "")


def test_a_long_curve_is_drawn_by_evenly_spaced_points_its_ends_included(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    captured = {}
    monkeypatch.setattr(common, "save_figure", lambda fig, stem: captured.setdefault("fig", fig))
    long = {**_curve("GLOC", "none", 0), "checkpoints": np.arange(1, 15001),
            "regret_mean": np.sqrt(np.arange(1, 15001)), "regret_se": np.ones(15000)}
    common.regret_curves("exp", {}, pd.DataFrame(), [long, _curve("ECOLog", "none", 0)],
                         tmp_path)
    lines = {line.get_label(): line for line in captured["fig"].get_axes()[0].get_lines()}
    x, y = lines["GLOC"].get_xdata(), lines["GLOC"].get_ydata()
    assert len(x) == 1000 and x[0] == 1 and x[-1] == 15000 and y[-1] == np.sqrt(15000)
    assert np.ptp(np.diff(x)) <= 1  # evenly spaced, to the nearest round
    assert np.array_equal(y, np.sqrt(x))
    assert len(lines["ECOLog"].get_xdata()) == 10  # a short curve: every point
    assert captured["fig"].get_axes()[0].get_ylim()[1] >= np.sqrt(15000)
