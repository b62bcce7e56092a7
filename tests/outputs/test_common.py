"""Generic regret-curve figure: panels by code state and accounting mode, a hue per ε, median and
interquartile band (readable with diverged runs), published end values as stars."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from figure_checks import (
    curves,
    figure_title,
    legend_colour_mismatches,
    legend_overlaps,
    narrowest_panel,
    published_artists,
)
from matplotlib.colors import to_rgb

from dpbandits.outputs import common
from dpbandits.paper.published import PublishedEntry

EXP = {"algorithms": [
    {"label": "GLOC", "policy": "GLOC"},
    {"label": "RS-GLinUCB (T2)", "policy": "RS-GLinUCB", "params": {"variant": "T2"}},
    {"label": "RS-GLinUCB (C)", "policy": "RS-GLinUCB", "params": {"variant": "C"}},
    {"label": "Private-GLM", "policy": "Private-GLM", "accounting": "paper"},
    {"label": "Private-GLM (strict)", "policy": "Private-GLM", "accounting": "strict"},
    {"label": "Private-GLM (ab8fd16)", "policy": "Private-GLM", "accounting": "paper",
     "params": {"code_state": "ab8fd16"}}]}
T = 10


def _curve(algorithm: str, epsilon: str, index: int, accounting: str = "strict",
           diverged: bool = False) -> dict:
    """Quartiles of √t·(1 + index); with `diverged`, a mean far above them (one run blew up)."""
    t = np.arange(1, T + 1)
    median = np.sqrt(t) * (1 + index)
    return {"algorithm": algorithm, "epsilon": epsilon, "instance_index": index,
            "instance": {"S": 2.0 + index}, "accounting": accounting, "checkpoints": t,
            "n_trials": 5, "regret_mean": median * (50 if diverged else 1),
            "regret_se": 0.1 * np.ones(T), "regret_q25": 0.8 * median, "regret_q50": median,
            "regret_q75": 1.2 * median}


def _curves() -> list[dict]:
    return [_curve(a, e, i, acc, diverged=(a == "Private-GLM" and e == "2")) for i in (0, 1)
            for a, e, acc in [("GLOC", "none", "strict"), ("RS-GLinUCB (T2)", "none", "strict"),
                              ("RS-GLinUCB (C)", "none", "strict")]
            + [("Private-GLM", e, "paper") for e in ("2", "4", "8", "10")]
            + [("Private-GLM (strict)", e, "strict") for e in ("2", "4", "8", "10")]
            + [("Private-GLM (ab8fd16)", e, "paper") for e in ("2", "8")]]


def _published(horizon: int) -> PublishedEntry:
    return PublishedEntry("glm:test", {
        "source": "Figure 1(b) test values", "horizon": horizon,
        "values": {"GLOC": {2.0: 7.0}, "Private-GLM (ab8fd16) ε=2": {3.0: 9.5}}})


def _draw(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **options):
    captured = {}

    def keep(fig, stem):
        captured["fig"] = fig
        return []

    monkeypatch.setattr(common, "save_figure", keep)
    summary = pd.DataFrame({"instance_index": [0, 1], "kappa": [18.4, 56.4], "T": [T, T]})
    common.regret_curves("exp", EXP, summary, _curves(), tmp_path, facet="S",
                         epsilons=[2, 8, 10], **options)
    return captured["fig"]


@pytest.fixture
def figure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    return _draw(monkeypatch, tmp_path, figure="Figure 1(b), probit",
                 published=_published(T))


def _panels(figure) -> dict[str, object]:
    return {ax.get_title(): ax for ax in figure.get_axes() if ax.axison}


def test_a_row_per_instance_a_panel_per_code_state_and_accounting_mode(figure) -> None:
    titles = list(_panels(figure))
    assert titles[:4] == [
        "S = 2 (κ = 18.40) · non-private algorithms",
        "S = 2 (κ = 18.40) · Private-GLM\ncode state d9c93e1 · paper accounting",
        "S = 2 (κ = 18.40) · Private-GLM (strict)\ncode state d9c93e1 · strict accounting",
        "S = 2 (κ = 18.40) · Private-GLM (ab8fd16)\ncode state ab8fd16 · paper accounting"]
    assert len(titles) == 8 and titles[4].startswith("S = 3 (κ = 56.40) · non-private")
    assert figure_title(figure).startswith("Figure 1(b), probit: cumulative regret, median")


def test_at_most_six_curves_a_panel_and_each_private_panel_one_label(figure) -> None:
    for title, ax in _panels(figure).items():
        assert 1 <= len(curves(ax)) <= 6, title
    private = _panels(figure)["S = 2 (κ = 18.40) · Private-GLM\ncode state d9c93e1 · paper "
                              "accounting"]
    assert [line.get_label() for line in curves(private)] == ["ε = 2", "ε = 8", "ε = 10"]


def test_one_distinct_hue_per_epsilon_the_same_in_every_panel(figure) -> None:
    colours: dict[str, set] = {}
    for ax in figure.get_axes():
        for line in curves(ax):
            if line.get_label().startswith("ε"):
                colours.setdefault(line.get_label(), set()).add(to_rgb(line.get_color()))
    assert sorted(colours) == ["ε = 10", "ε = 2", "ε = 8"]
    assert all(len(c) == 1 for c in colours.values())
    assert len({next(iter(c)) for c in colours.values()}) == 3


def test_line_is_the_median_and_band_the_interquartile_range_despite_a_diverged_run(
        figure) -> None:
    ax = _panels(figure)["S = 2 (κ = 18.40) · Private-GLM\ncode state d9c93e1 · paper "
                         "accounting"]
    line = next(line for line in curves(ax) if line.get_label() == "ε = 2")
    median = np.sqrt(np.arange(1, T + 1))
    assert np.allclose(line.get_ydata(), median)
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.max() == pytest.approx(1.2 * median.max())
    assert band.min() == pytest.approx(0.8 * median.min())
    # the diverged mean (50 × the median) does not set the scale
    assert ax.get_ylim()[1] == pytest.approx(1.08 * 1.2 * median.max())


def test_published_end_values_are_stars_at_the_horizon_in_the_curve_colour(figure) -> None:
    """GLOC at S = 2 and ab8fd16 ε = 2 at S = 3 (the fixture's published values), each in the
    colour of its curve in the panel it belongs to."""
    stars = {s.get_label(): s for s in published_artists(figure)}
    assert sorted((k, float(s.get_xdata()[0]), float(s.get_ydata()[0]))
                  for k, s in stars.items()) == [
        ("published: GLOC", T, 7.0), ("published: Private-GLM (ab8fd16) ε=2", T, 9.5)]
    for label, title, curve in (
            ("published: GLOC", "S = 2 (κ = 18.40) · non-private algorithms", "GLOC"),
            ("published: Private-GLM (ab8fd16) ε=2", "S = 3 (κ = 56.40) · Private-GLM "
             "(ab8fd16)\ncode state ab8fd16 · paper accounting", "ε = 2")):
        ax = _panels(figure)[title]
        assert stars[label].axes is ax
        line = next(line for line in curves(ax) if line.get_label() == curve)
        assert to_rgb(stars[label].get_markerfacecolor()) == to_rgb(line.get_color())


def test_published_values_at_another_horizon_are_left_out_and_said_so(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fig = _draw(monkeypatch, tmp_path, published=_published(5000))
    assert published_artists(fig) == []
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert f"published values at T = 5000, not shown (run T = {T})" in texts


def test_the_legend_is_outside_every_panel_its_colours_are_the_curves(figure) -> None:
    assert legend_overlaps(figure) == []
    assert legend_colour_mismatches(figure) == []
    assert narrowest_panel(figure) > 2.5


def test_curves_without_quartiles_are_refused_naming_the_algorithm(tmp_path: Path) -> None:
    old = {k: v for k, v in _curve("GLOC", "none", 0).items() if not k.startswith("regret_q")}
    with pytest.raises(ValueError, match="lack the median .* for 'GLOC'"):
        common.regret_curves("exp", EXP, pd.DataFrame({"T": [T]}), [old], tmp_path)


def test_a_long_curve_is_drawn_by_evenly_spaced_points_its_ends_included(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    captured = {}
    monkeypatch.setattr(common, "save_figure", lambda fig, stem: captured.setdefault("fig", fig))
    n = 15000
    t = np.arange(1, n + 1)
    long = {**_curve("GLOC", "none", 0), "checkpoints": t, "regret_q50": np.sqrt(t),
            "regret_q25": np.sqrt(t), "regret_q75": np.sqrt(t)}
    common.regret_curves("exp", {}, pd.DataFrame({"T": [n]}),
                         [long, _curve("ECOLog", "none", 0)], tmp_path)
    lines = {line.get_label(): line for line in captured["fig"].get_axes()[0].get_lines()}
    x, y = lines["GLOC"].get_xdata(), lines["GLOC"].get_ydata()
    assert len(x) == 1000 and x[0] == 1 and x[-1] == n and y[-1] == np.sqrt(n)
    assert np.ptp(np.diff(x)) <= 1  # evenly spaced, to the nearest round
    assert np.array_equal(y, np.sqrt(x))
    assert len(lines["ECOLog"].get_xdata()) == T  # a short curve: every point
    assert captured["fig"].get_axes()[0].get_ylim()[1] >= np.sqrt(n)
