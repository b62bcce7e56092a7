"""What a reviewer checks in a figure, measured on the matplotlib objects: curves per panel, the
legend outside every panel, legend colours equal to the artists', the paper's figure in the
title, the accounting mode named, published values drawn."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb
from matplotlib.container import ErrorbarContainer
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

KEY_PREFIXES = ("line:", "shaded:", "band:", "error bars:", "solid", "dotted", "published",
                "dashed")


def curves(ax: Any) -> list[Line2D]:
    """Data curves of a panel: drawn lines (not markers only) of more than one point that are
    neither reference lines nor published values."""
    return [line for line in ax.get_lines()
            if line.get_gid() not in ("reference", "published")
            and line.get_linestyle() not in ("None", "none", "", " ")
            and len(np.atleast_1d(line.get_xdata())) > 1]


def most_curves(fig: plt.Figure) -> int:
    return max((len(curves(ax)) for ax in fig.get_axes() if ax.axison), default=0)


def _renderer(fig: plt.Figure) -> Any:
    if not hasattr(fig.canvas, "get_renderer"):  # a closed figure: draw it again with Agg
        FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def legends(fig: plt.Figure) -> list[Any]:
    return [*fig.legends, *(ax.get_legend() for ax in fig.get_axes() if ax.get_legend())]


def legend_overlaps(fig: plt.Figure) -> list[str]:
    """What any legend box covers: a panel, or a panel's tick labels or axis labels."""
    renderer = _renderer(fig)
    found = []
    for legend in legends(fig):
        box = legend.get_window_extent(renderer)
        for i, ax in enumerate(a for a in fig.get_axes() if a.axison):
            if box.overlaps(ax.get_window_extent(renderer)):
                found.append(f"panel {i}")
            texts = [ax.xaxis.label, ax.yaxis.label, *ax.get_xticklabels(),
                     *ax.get_yticklabels()]
            if any(t.get_text() and box.overlaps(t.get_window_extent(renderer)) for t in texts):
                found.append(f"labels of panel {i}")
    return found


def narrowest_panel(fig: plt.Figure) -> float:
    """Width in inches of the narrowest panel."""
    renderer = _renderer(fig)
    return min(ax.get_window_extent(renderer).width / fig.dpi
               for ax in fig.get_axes() if ax.axison)


def _color(artist: Any) -> tuple[float, ...] | None:
    if isinstance(artist, tuple):
        artist = artist[0]
    if isinstance(artist, ErrorbarContainer):
        artist = artist.lines[0]
    if isinstance(artist, Line2D):
        if artist.get_linestyle() in ("None", "none", "", " "):
            return to_rgb(artist.get_markerfacecolor())
        return to_rgb(artist.get_color())
    if isinstance(artist, Patch):
        return to_rgb(artist.get_facecolor())
    return None


def legend_colour_mismatches(fig: plt.Figure) -> list[str]:
    """Legend entries whose colour differs from that of the drawn artists of the same label, and
    entries (other than keys explaining styles) that label no drawn artist."""
    drawn: dict[str, set[tuple[float, ...]]] = {}
    for ax in fig.get_axes():
        for artist in [*ax.get_lines(), *ax.patches]:
            color = _color(artist)
            if color is not None and not artist.get_label().startswith("_"):
                drawn.setdefault(artist.get_label(), set()).add(color)
    bad = []
    for legend in legends(fig):
        for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=True):
            label = text.get_text()
            if label.startswith(KEY_PREFIXES) or not label or handle is None:
                continue
            if label not in drawn:
                bad.append(f"{label!r}: no drawn artist")
            elif _color(handle) not in drawn[label]:
                bad.append(f"{label!r}: legend {_color(handle)} vs drawn {drawn[label]}")
    return bad


def figure_title(fig: plt.Figure) -> str:
    """The figure's title (dpbandits.plots.figure_title), unwrapped."""
    titles = [t.get_text() for t in fig.texts if t.get_gid() == "figure-title"]
    return " ".join(titles[0].split("\n")) if titles else ""


def all_text(fig: plt.Figure) -> str:
    """Every title, legend text and y tick label of the figure."""
    texts = [figure_title(fig), *(ax.get_title() for ax in fig.get_axes())]
    texts += [t.get_text() for legend in legends(fig) for t in legend.get_texts()]
    texts += [ax.get_yticklabels()[i].get_text() for ax in fig.get_axes()
              for i in range(len(ax.get_yticklabels()))]
    return "\n".join(texts)


def published_artists(fig: plt.Figure) -> list[Any]:
    return [a for ax in fig.get_axes() for a in [*ax.get_lines(), *ax.patches]
            if a.get_gid() == "published"]
