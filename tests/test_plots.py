"""Plot helpers: distinct colours within a figure, stable across figures."""

from __future__ import annotations

from dpbandits.plots import algorithm_color, distinct_colors, lighten

TS_METHODS = ["AdaPrivate-UCB", "AdaPrivate-TS", "AdaPrivate-TS-Amp", "AdaPrivate-TS-Adaptive",
              "JDP-LinUCB", "zCDP-Episodic", "AdaC-OFUL-zCDP", "RarelySwitching-zCDP",
              "DGS-LinUCB", "LinUCB", "LinTS"]


def test_every_label_of_a_figure_gets_its_own_colour() -> None:
    labels = [*TS_METHODS, "RS-GLinUCB (T2)", "RS-GLinUCB (C)", "Private-GLM",
              "Private-GLM (strict)"]
    colors = distinct_colors(labels)
    assert list(colors) == labels
    assert len(set(colors.values())) == len(labels)


def test_a_label_keeps_its_usual_colour_unless_taken() -> None:
    colors = distinct_colors(["GLOC", "RS-GLinUCB (T2)", "RS-GLinUCB (C)"])
    assert colors["GLOC"] == algorithm_color("GLOC")
    assert colors["RS-GLinUCB (T2)"] == algorithm_color("RS-GLinUCB")
    assert colors["RS-GLinUCB (C)"] != colors["RS-GLinUCB (T2)"]
    assert distinct_colors(["GLOC", "RS-GLinUCB (T2)", "RS-GLinUCB (C)"]) == colors


def test_lighten_blends_towards_white() -> None:
    assert lighten((0.2, 0.4, 0.6), 0.0) == (0.2, 0.4, 0.6)
    assert lighten((0.2, 0.4, 0.6), 1.0) == (1.0, 1.0, 1.0)
    assert lighten((0.0, 0.5, 1.0), 0.5) == (0.5, 0.75, 1.0)
