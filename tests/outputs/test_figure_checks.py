"""The figure checks catch what they look for (negative controls of figure_checks)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from figure_checks import (
    curves,
    legend_colour_mismatches,
    legend_overlaps,
    most_curves,
    narrowest_panel,
)


def test_curves_counts_data_lines_not_references_markers_or_published_values() -> None:
    fig, ax = plt.subplots()
    for k in range(7):
        ax.plot([1, 2, 3], [k, k + 1, k + 2])
    ax.axhline(1.0, gid="reference")
    ax.plot([1, 2], [3, 4], "o")  # markers only
    ax.plot([3, 3], [1, 2], gid="published")
    assert len(curves(ax)) == 7 and most_curves(fig) == 7
    plt.close(fig)


def test_a_legend_over_the_x_labels_or_inside_a_panel_is_caught() -> None:
    """The old robustness layout: the legend anchored just below the axes, over its x label."""
    fig, ax = plt.subplots(figsize=(4, 3), layout="constrained")
    ax.plot([1, 2], [1, 2], label="a")
    ax.set_xlabel("B")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.02))
    assert legend_overlaps(fig)
    inside = plt.figure(figsize=(4, 3))
    inside.add_subplot().plot([1, 2], [1, 2], label="a")
    inside.axes[0].legend(loc="center")
    assert legend_overlaps(inside) == ["panel 0"]
    plt.close("all")


def test_a_legend_squeezing_the_panel_is_measured() -> None:
    fig, ax = plt.subplots(figsize=(4.5, 3), layout="constrained")
    ax.plot([1, 2], [1, 2], label="a long legend entry " * 2)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
    assert narrowest_panel(fig) < 2.5
    plt.close(fig)


def test_a_legend_swatch_of_another_colour_than_its_bars_is_caught() -> None:
    """The old robustness legend: a label on an empty bar call takes the default colour."""
    fig, ax = plt.subplots()
    ax.bar([0, 1], [1, 2], color="tab:brown")
    ax.bar([], [], color="tab:brown", label="gamma = 0.9")
    ax.legend()
    assert legend_colour_mismatches(fig)
    good, ax = plt.subplots()
    ax.plot([0, 1], [1, 2], color="tab:brown", label="gamma = 0.9")
    ax.legend()
    assert legend_colour_mismatches(good) == []
    plt.close("all")


def test_a_legend_entry_naming_nothing_drawn_is_caught() -> None:
    fig, ax = plt.subplots()
    ax.plot(np.arange(3), color="tab:blue", label="drawn")
    ax.legend(handles=[plt.Line2D([], [], color="tab:red", label="not drawn")])
    assert legend_colour_mismatches(fig) == ["'not drawn': no drawn artist"]
    plt.close(fig)
