"""Plot helpers: one colour per algorithm across the project, variants, ticks, the scale mark."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
import yaml

from dpbandits import plots
from dpbandits.config import expand_algorithms, load_config
from dpbandits.plots import (
    algorithm_color,
    build_styles,
    darken,
    distinct_colors,
    drawn_points,
    lighten,
    plain_ticks,
    save_figure,
    using_config,
    variant_rank,
)
from dpbandits.scale import marked, paper_config, scale_note

from conftest import REPO

TS_METHODS = ["AdaPrivate-UCB", "AdaPrivate-TS", "AdaPrivate-TS-Amp", "AdaPrivate-TS-Adaptive",
              "JDP-LinUCB", "zCDP-Episodic", "AdaC-OFUL-zCDP", "RarelySwitching-zCDP",
              "DGS-LinUCB", "LinUCB", "LinTS"]


def test_the_algorithms_of_one_paper_never_share_a_colour() -> None:
    config = paper_config()
    styles = build_styles(config["experiments"].values())
    for paper in ("glm", "linear", "ts"):
        policies = {e["policy"] for exp in config["experiments"].values()
                    if exp["paper"] == paper for e in exp["algorithms"]}
        assert len({styles.colors[p] for p in policies}) == len(policies), paper


def test_a_label_has_the_same_colour_in_every_experiment_that_declares_it() -> None:
    config = paper_config()
    seen: dict[str, set] = {}
    for exp in config["experiments"].values():
        for entry in expand_algorithms(exp["algorithms"]):
            seen.setdefault(entry["label"], set()).add(algorithm_color(entry["label"], exp))
    assert seen["GLOC"] and all(len(colors) == 1 for colors in seen.values())


def test_a_label_keeps_its_colour_in_every_figure_whatever_else_it_shows() -> None:
    """The colours a figure of each experiment gives its algorithms (declared labels, not grid
    cells) agree between experiments."""
    config = paper_config()
    seen: dict[str, set] = {}
    for exp in config["experiments"].values():
        labels = list(dict.fromkeys(e["grid_of"] for e in expand_algorithms(exp["algorithms"])))
        for label, color in distinct_colors(labels, exp).items():
            seen.setdefault(label, set()).add(color)
    assert len(seen["LinTS"]) == len(seen["AdaPrivate-TS"]) == 1
    assert {label for label, colors in seen.items() if len(colors) > 1} == set()


def test_smoke_and_paper_scale_runs_use_the_same_colours() -> None:
    smoke = load_config(REPO / "config" / "smoke.yaml")
    with using_config(smoke):
        in_smoke = {label: algorithm_color(label) for label in
                    [*TS_METHODS, "GLOC", "Private-GLM (strict)", "Central DP (Alg. 1)"]}
    assert in_smoke == {label: algorithm_color(label) for label in in_smoke}


def test_variants_are_shades_of_their_algorithm_with_their_own_rank() -> None:
    base, strict = algorithm_color("Private-GLM"), algorithm_color("Private-GLM (strict)")
    assert variant_rank("Private-GLM") == 0 and variant_rank("Private-GLM (strict)") == 1
    assert strict == darken(base, plots.VARIANT_DARKEN[1]) and strict != base
    assert algorithm_color("AdaPrivate-TS [B=100]") == algorithm_color("AdaPrivate-TS")


def test_a_label_is_resolved_through_its_experiment_first() -> None:
    """"+TS" is AdaPrivate-TS in the ablation: the same hue, a later variant's shade."""
    exp = {"algorithms": [{"label": "+TS", "policy": "AdaPrivate-TS"}]}
    hue = build_styles(paper_config()["experiments"].values()).colors["AdaPrivate-TS"]
    assert algorithm_color("+TS", exp) == darken(hue, plots.VARIANT_DARKEN[variant_rank("+TS")])


def test_a_new_algorithm_of_a_custom_config_gets_a_colour_no_other_of_its_paper_has() -> None:
    custom = {"experiments": {"mine": {"paper": "glm", "algorithms": [
        {"label": "GLOC", "policy": "GLOC"}, {"label": "Mine", "policy": "Uniform"}]}}}
    with using_config(custom):
        glm = [algorithm_color(label) for label in
               ("RS-GLinUCB (T2)", "GLM-UCB", "GLOC", "Private-GLM", "ECOLog", "Shuffle-GLM")]
        assert algorithm_color("Mine") not in glm


def test_every_label_of_a_figure_gets_its_own_colour() -> None:
    labels = [*TS_METHODS, "AdaPrivate-TS-Adaptive (tuned)", "AdaPrivate-TS [B=100]",
              "AdaPrivate-TS [B=300]"]
    colors = distinct_colors(labels)
    assert list(colors) == labels
    assert len(set(colors.values())) == len(labels)
    assert colors["AdaPrivate-TS"] == algorithm_color("AdaPrivate-TS")


def test_lighten_and_darken_blend_towards_white_and_black() -> None:
    assert lighten((0.2, 0.4, 0.6), 0.0) == (0.2, 0.4, 0.6)
    assert lighten((0.2, 0.4, 0.6), 1.0) == (1.0, 1.0, 1.0)
    assert lighten((0.0, 0.5, 1.0), 0.5) == (0.5, 0.75, 1.0)
    assert darken((0.2, 0.4, 1.0), 0.5) == (0.1, 0.2, 0.5)


def test_drawn_points_are_every_point_or_evenly_spaced_ones_with_both_ends() -> None:
    assert drawn_points(7).tolist() == list(range(7))
    assert drawn_points(1000).tolist() == list(range(1000))
    drawn = drawn_points(15000)
    assert len(drawn) == 1000 and drawn[0] == 0 and drawn[-1] == 14999
    assert set(np.diff(drawn)) <= {15, 16}
    assert drawn_points(10, most=3).tolist() == [0, 4, 9]


def test_log_epsilon_ticks_are_plain_numbers() -> None:
    fig, ax = plt.subplots()
    ax.plot([0.5, 1, 2, 5], [3, 2, 1, 0.5])
    ax.set_xscale("log")
    plain_ticks(ax.xaxis, [0.5, 1, 2, 5])
    fig.canvas.draw()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.5", "1", "2", "5"]
    assert not [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text()]
    plt.close(fig)


def test_scale_note_compares_the_horizon_with_the_paper_scale_config() -> None:
    horizon = paper_config()["experiments"]["glm_table2"]["instance"]["horizon"]
    assert scale_note("glm_table2", horizon) is None
    assert scale_note("glm_table2", 300) == (f"smoke scale, not comparable: T = 300, paper T = "
                                             f"{horizon}")
    assert scale_note("glm_table2", 2 * horizon).startswith("not comparable: T = ")
    assert scale_note("not_an_experiment", 300) is None


def test_the_smoke_config_is_marked_for_every_experiment() -> None:
    smoke = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    config = load_config(REPO / "config" / "smoke.yaml")
    for name in smoke["experiments"]:
        assert scale_note(name, config["experiments"][name]["instance"]["horizon"]), name


def _figure() -> plt.Figure:
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([1, 2, 3], [1, 4, 9], label="x")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return fig


def test_a_marked_figure_carries_the_mark_and_an_unmarked_one_none(tmp_path: Path) -> None:
    marked_fig, plain_fig = _figure(), _figure()
    with marked("smoke scale, not comparable: T = 300, paper T = 5000"):
        save_figure(marked_fig, tmp_path / "a")
    save_figure(plain_fig, tmp_path / "b")
    assert [t.get_text() for t in marked_fig.texts if t.get_gid() == "scale-mark"] == [
        "SMOKE SCALE, NOT COMPARABLE: T = 300, PAPER T = 5000"]
    assert plain_fig.texts == []
    assert all((tmp_path / f).stat().st_size > 0 for f in ("a.png", "a.pdf", "b.png", "b.pdf"))


@pytest.mark.parametrize("suffix", [".png", ".pdf"])
def test_figures_are_byte_for_byte_deterministic(tmp_path: Path, suffix: str) -> None:
    for name in ("one", "two"):
        with marked("smoke scale, not comparable: T = 3, paper T = 5"):
            save_figure(_figure(), tmp_path / name)
    one, two = ((tmp_path / f"{n}{suffix}").read_bytes() for n in ("one", "two"))
    assert one == two


def test_panels_hold_one_accounting_mode_and_at_most_six_curves_in_order() -> None:
    curves = {"a": 2, "b": 2, "c": 1, "d": 2, "amp": 1, "e": 1}
    modes = {"amp": "paper"}
    assert plots.pack_panels(list(curves), curves, modes) == [
        ("strict", ["a", "b", "c"]), ("strict", ["d", "e"]), ("paper", ["amp"])]
    assert plots.pack_panels(["big"], {"big": 8}, {}) == [("strict", ["big"])]  # never split


def test_each_epsilon_has_its_own_hue_ordered_from_the_smallest() -> None:
    colors = plots.epsilon_colors(["8", "none", "2", 4.0, "2.0"])
    assert list(colors) == ["2", "4", "8"]
    assert len(set(colors.values())) == 3
    brightness = [sum(c) for c in colors.values()]
    assert brightness == sorted(brightness)  # darkest for the smallest ε
    assert plots.epsilon_colors(["none"]) == {}
