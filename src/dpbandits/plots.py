"""Plot helpers shared by every figure: one colour per algorithm across the project, 95 % bands,
plain ε ticks, the smoke-scale mark, PNG + PDF output.

Colours. Every algorithm (registered policy) has one colour in every figure of a run. The
assignment reads the experiments of the paper-scale configuration (dpbandits.scale) and then
those of the run's configuration, in order: each algorithm, at its first appearance, takes the
first palette colour (tab10 first) that no algorithm of the same paper already holds, so the
algorithms of one paper never share a colour and a smoke run looks like a paper-scale one. The
labels declared for one algorithm are its variants (e.g. "Private-GLM (strict)", "+TS"): the
first keeps the colour, the next ones are darker shades of it with their own marker, ranked in
the same order. Grid cells ("AdaPrivate-TS [B=100]") are their declared label's.

Bands and error bars are 95 % t-intervals of the mean over trials, t_{0.975, n−1}·s.e.
(dpbandits.stats), except on the regret curves, whose runs can diverge: there the line is the
median over trials and the band the interquartile range (`QUARTILE_TEXT`); captions say which.

Reading aids shared by the figures: one hue per ε (`epsilon_colors`), published values as
black-edged stars (`published_marker`), horizontal reference lines (`reference_line`, gid
"reference"), the title over the panels (`figure_title`) and one legend per figure to their
right (`figure_legend`), for which `LEGEND_WIDTH` inches are added to the figure so that the
panels keep their size.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axis import Axis  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator  # noqa: E402

from dpbandits import stats  # noqa: E402
from dpbandits.atomic import atomic_output  # noqa: E402
from dpbandits.scale import current_mark, paper_config  # noqa: E402
from dpbandits.seeding import stable_key  # noqa: E402

RGB = tuple[float, float, float]

# tab10 first (its ten colours are the preferred ones), then Dark2 and tab20 for larger sets.
PALETTE: list[RGB] = list(dict.fromkeys(
    tuple(float(v) for v in c[:3])
    for name in ("tab10", "Dark2", "tab20")
    for c in plt.get_cmap(name).colors  # type: ignore[attr-defined]
))
_PREFERRED = 10
DRAWN_POINTS = 1000  # of a curve: about a point per pixel of the widest panel at 150 dpi
VARIANT_DARKEN = (0.0, 0.4, 0.2, 0.3, 0.1)
VARIANT_MARKERS = ("o", "^", "s", "D", "v", "P", "X")
BAND_TEXT = "95 % t-interval of the mean over trials"
QUARTILE_TEXT = "line: median over trials; band: interquartile range"
MARK_COLOR = "#b3261e"
EPSILON_COLORMAP = "plasma"
EPSILON_SPAN = (0.0, 0.8)  # of the colormap: its last fifth (yellow) is too light on white
PUBLISHED_STYLE = {"marker": "*", "ms": 12, "mec": "black", "mew": 0.8, "ls": "none",
                   "zorder": 6}
UNIFORM_COLOR = "0.45"
LEGEND_WIDTH = 2.9  # inches added to the right of the panels for the figure's legend
MOST_CURVES = 6  # data series (curves) per panel at most
PUBLISHED_BAR = {"lw": 6, "alpha": 0.35, "solid_capstyle": "butt", "gid": "published"}


@dataclass(frozen=True)
class Styles:
    """The project-wide look of every algorithm: its colour and the rank of each variant."""

    colors: dict[str, RGB] = field(default_factory=dict)
    policies: dict[str, str] = field(default_factory=dict)
    ranks: dict[str, int] = field(default_factory=dict)

    def declared(self, label: str, exp: dict[str, Any] | None = None) -> tuple[str, str]:
        """(declared label, algorithm) of a label, from `exp` first, then the project."""
        for entry in (exp or {}).get("algorithms") or []:
            name = entry.get("label", entry["policy"])
            if label == name or label.startswith(name + " ["):
                return name, entry["policy"]
        if label not in self.policies and " [" in label:
            head = label.rsplit(" [", 1)[0]
            if head in self.policies:
                return head, self.policies[head]
        return label, self.policies.get(label, base_name(label))

    def rank(self, label: str, exp: dict[str, Any] | None = None) -> int:
        """Rank of the label's variant among the declared labels of its algorithm (0: first)."""
        return self.ranks.get(self.declared(label, exp)[0], 0)

    def color(self, label: str, exp: dict[str, Any] | None = None) -> RGB:
        """The algorithm's colour, darkened for a later variant."""
        name, policy = self.declared(label, exp)
        hue = self.colors.get(policy) or PALETTE[stable_key(policy) % _PREFERRED]
        return darken(hue, VARIANT_DARKEN[self.ranks.get(name, 0) % len(VARIANT_DARKEN)])


def base_name(label: str) -> str:
    """A label without its variant or grid suffix: "RS-GLinUCB (T2)" → "RS-GLinUCB"."""
    return label.split(" [")[0].split(" (")[0]


def build_styles(experiments: Iterable[dict[str, Any]]) -> Styles:
    """Colours and variant ranks from experiment entries, in order (see the module docstring)."""
    order: list[str] = []
    papers: dict[str, set[str]] = {}
    policies: dict[str, str] = {}
    labels: dict[str, list[str]] = {}
    for exp in experiments:
        group = papers.setdefault(str(exp.get("paper") or "other"), set())
        for entry in exp.get("algorithms") or []:
            policy = entry["policy"]
            label = entry.get("label", policy)
            if policy not in order:
                order.append(policy)
            group.add(policy)
            policies.setdefault(label, policy)
            if label not in labels.setdefault(policy, []):
                labels[policy].append(label)
    colors: dict[str, RGB] = {}
    for policy in order:
        taken = {colors[p] for group in papers.values() if policy in group
                 for p in group if p in colors}
        colors[policy] = next((c for c in PALETTE if c not in taken),
                              PALETTE[len(colors) % len(PALETTE)])
    ranks = {label: i for names in labels.values() for i, label in enumerate(names)}
    return Styles(colors, policies, ranks)


_STYLES: ContextVar[Styles | None] = ContextVar("dpbandits_styles", default=None)
_DEFAULT: list[Styles] = []


def styles() -> Styles:
    """The styles in use: those of the run (`using_config`), else the paper-scale config's."""
    current = _STYLES.get()
    if current is not None:
        return current
    if not _DEFAULT:
        _DEFAULT.append(build_styles(paper_config().get("experiments", {}).values()))
    return _DEFAULT[0]


@contextmanager
def using_config(config: dict[str, Any] | None, paper: str | Path | None = None) \
        -> Iterator[Styles]:
    """Within the block, colours come from the paper-scale config then the run's `config`."""
    experiments = [*paper_config(paper).get("experiments", {}).values(),
                   *(config or {}).get("experiments", {}).values()]
    token = _STYLES.set(build_styles(experiments))
    try:
        yield _STYLES.get()  # type: ignore[misc]
    finally:
        _STYLES.reset(token)


def algorithm_color(label: str, exp: dict[str, Any] | None = None) -> RGB:
    """The project colour of a label: its algorithm's, darker for a later variant."""
    return styles().color(label, exp)


def variant_rank(label: str, exp: dict[str, Any] | None = None) -> int:
    """0 for an algorithm's first declared label, 1, 2, … for its further variants."""
    return styles().rank(label, exp)


def variant_marker(label: str, exp: dict[str, Any] | None = None) -> str:
    """The marker of a label's variant (the first variant's is "o")."""
    return VARIANT_MARKERS[variant_rank(label, exp) % len(VARIANT_MARKERS)]


def distinct_colors(labels: Iterable[str], exp: dict[str, Any] | None = None) \
        -> dict[str, RGB]:
    """Each label's project colour; a label whose colour another label of the same figure
    already has (e.g. two cells of one grid) gets the next free palette colour."""
    used: set[RGB] = set()
    out = {}
    for label in dict.fromkeys(labels):
        color = algorithm_color(label, exp)
        if color in used:
            color = next((c for c in PALETTE if c not in used), color)
        used.add(color)
        out[label] = color
    return out


def lighten(color: Sequence[float], amount: float) -> RGB:
    """`color` blended towards white by `amount` ∈ [0, 1]."""
    return tuple(c + (1.0 - c) * amount for c in color[:3])  # type: ignore[return-value]


def darken(color: Sequence[float], amount: float) -> RGB:
    """`color` blended towards black by `amount` ∈ [0, 1]."""
    return tuple(c * (1.0 - amount) for c in color[:3])  # type: ignore[return-value]


def ci95(se: Any, n: int) -> Any:
    """Half-width of the 95 % t-interval from standard error(s) and n trials (nan if n < 2)."""
    if n < 2:
        return np.nan * np.asarray(se, dtype=float)
    return stats.t_margin(1.0, n - 1) * np.asarray(se, dtype=float)


def drawn_points(n: int, most: int = DRAWN_POINTS) -> np.ndarray:
    """Indices of the points of an n-point curve that are drawn: all of them, or `most` evenly
    spaced ones, the first and the last included (a figure shows no more than about one point
    per pixel, and drawing every round of a long run is most of a figure's cost)."""
    if n <= most:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, most).round().astype(np.intp))


def plain_ticks(axis: Axis, values: Iterable[float]) -> None:
    """Ticks at `values` labelled as plain numbers ("0.5", "20000"), no minor tick labels."""
    ticks = sorted({float(v) for v in values if np.isfinite(v)})
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_ticklabels([f"{v:g}" if abs(v) < 1e6 else f"{v:.3g}" for v in ticks])
    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())


def log_ticks(low: float, high: float) -> list[float]:
    """1-2-5 ticks within [low, high] for a log axis (1-1.5-2-3-5-7 on a narrow range)."""
    exponents = range(int(np.floor(np.log10(low))), int(np.ceil(np.log10(high))) + 1)
    for mantissas in ((1, 2, 5), (1, 1.5, 2, 3, 5, 7)):
        inside = [m * 10.0 ** e for e in exponents for m in mantissas
                  if low <= m * 10.0 ** e <= high]
        if len(inside) >= 3:
            return inside
    return inside if len(inside) >= 2 else [low, high]


def band_handle(color: Any = "0.5", text: str = f"shaded: {BAND_TEXT}") -> Patch:
    """A legend entry for the shaded bands."""
    return Patch(facecolor=color, alpha=0.25, edgecolor="none", label=text)


def errorbar_handle(n: str, color: Any = "0.3") -> Line2D:
    """A legend entry for the error bars, with the number of trials."""
    return Line2D([], [], color=color, ls="none", marker="|", ms=9, mew=1.2,
                  label=f"error bars: {BAND_TEXT} (n = {n})")


def style_handle(text: str, linestyle: str = "-", marker: str | None = None,
                 color: Any = "0.3", **kwargs: Any) -> Line2D:
    """A legend entry explaining a line style or marker."""
    return Line2D([], [], color=color, ls=linestyle, marker=marker, label=text, **kwargs)


def epsilon_order(epsilon: str | float) -> float:
    """Sort key of an ε ("none", the non-private runs, first)."""
    return -1.0 if epsilon in ("none", None) else float(epsilon)


def epsilon_colors(epsilons: Iterable[str | float]) -> dict[str, RGB]:
    """One hue per private ε (keys: the ε as "%g" text), smallest ε darkest, evenly spread over
    the `EPSILON_COLORMAP`, so that the same ε has the same hue in every panel of a figure."""
    values = sorted({f"{float(e):g}" for e in epsilons if e not in ("none", None)}, key=float)
    cmap = plt.get_cmap(EPSILON_COLORMAP)
    spots = np.linspace(*EPSILON_SPAN, len(values)) if len(values) > 1 \
        else [EPSILON_SPAN[0]] * len(values)
    return {v: tuple(float(c) for c in cmap(x)[:3]) for v, x in zip(values, spots, strict=True)}


def reference_line(ax: Any, y: float, label: str, color: Any = "0.35", ls: str = ":",
                   vertical: bool = False) -> Line2D:
    """A labelled horizontal (or vertical) reference line, not a data curve (gid "reference")."""
    draw = ax.axvline if vertical else ax.axhline
    return draw(y, color=color, ls=ls, lw=1.0, label=label, gid="reference", zorder=1)


def uniform_line(ax: Any, value: float, vertical: bool = False) -> Line2D | None:
    """The NP% of choosing uniformly at random, where NP% compresses (docs/ts.md, "Metrics")."""
    if not np.isfinite(value):
        return None
    return reference_line(ax, value, f"uniform random choice ({value:.1f})", UNIFORM_COLOR, "-.",
                          vertical)


def published_marker(ax: Any, x: Any, y: Any, color: Any, label: str = "published") \
        -> Line2D:
    """Published value(s) as black-edged stars in the colour of the series they belong to."""
    (line,) = ax.plot(np.atleast_1d(x), np.atleast_1d(y), color=color, mfc=color, gid="published",
                      label=label, **PUBLISHED_STYLE)
    return line


def comparable(published: dict[str, Any] | None) -> dict[str, Any] | None:
    """Published data to draw: none on a figure marked as of another scale than the paper's."""
    return None if current_mark() else published


def published_handle(text: str) -> Line2D:
    """The legend entry of the published stars."""
    return Line2D([], [], color="0.6", mfc="0.6", label=text, **PUBLISHED_STYLE)


def note_handle(text: str) -> Line2D:
    """A legend line of text only (no symbol)."""
    return Line2D([], [], ls="none", label=text)


def _legend_share(fig: plt.Figure) -> float:
    """The fraction of the figure's width on its right kept for the figure's legend."""
    return min(0.45, LEGEND_WIDTH / float(fig.get_figwidth()))


def _reserve(fig: plt.Figure, right: float | None = None, top: float | None = None) -> None:
    """Keep the panels (constrained layout) left of `right` and below `top` (figure fractions)."""
    if fig.get_layout_engine() is None:
        fig.set_layout_engine("constrained")
    x0, y0, w, h = fig.get_layout_engine().get().get("rect", (0.0, 0.0, 1.0, 1.0))
    w = w if right is None else right - x0
    h = h if top is None else top - y0
    fig.get_layout_engine().set(rect=(x0, y0, w, h))


def figure_title(fig: plt.Figure, text: str, fontsize: float = 10) -> Any:
    """The figure's title (gid "figure-title"), centred over the panels (left of the legend),
    wrapped to their width, with room kept for it above them."""
    share = _legend_share(fig)
    chars = max(30, int((1.0 - share) * fig.get_figwidth() * 72 / (0.55 * fontsize)))
    wrapped = textwrap.fill(text, chars)
    lines = wrapped.count("\n") + 1
    height = (lines * 1.3 * fontsize / 72 + 0.12) / float(fig.get_figheight())
    _reserve(fig, top=1.0 - height)
    return fig.text(0.5 * (1.0 - share), 1.0 - 0.04 / float(fig.get_figheight()), wrapped,
                    ha="center", va="top", fontsize=fontsize, gid="figure-title")


def figure_legend(fig: plt.Figure, entries: Sequence[tuple[Any, str]], fontsize: float = 7.5,
                  **kwargs: Any) -> Any:
    """One legend of (handle, text) entries for the whole figure, in a column of
    `LEGEND_WIDTH` inches right of the panels (figures are made that much wider, so the
    panels keep their size)."""
    share = _legend_share(fig)
    _reserve(fig, right=1.0 - share)
    return fig.legend([h for h, _ in entries], [t for _, t in entries], loc="upper left",
                      bbox_to_anchor=(1.0 - share + 0.01, 1.0), bbox_transform=fig.transFigure,
                      fontsize=fontsize, frameon=False, **kwargs)


def trials_text(values: Iterable[Any]) -> str:
    """"10", or "2–10" when the number of trials differs between series (0, unknown, left out)."""
    counts = sorted({int(v) for v in values if np.isfinite(v) and v}) or [0]
    return f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"


def pack_panels(methods: list[str], curves: dict[str, int], accounting: dict[str, str],
                most: int = MOST_CURVES) -> list[tuple[str, list[str]]]:
    """Methods into panels of one accounting mode each ("strict" first), in their order, a panel
    filled up to `most` curves before the next begins (a method's curves stay together)."""
    panels: list[tuple[str, list[str]]] = []
    modes = list(dict.fromkeys(accounting.get(m, "strict") for m in methods))
    for mode in sorted(modes, key=lambda m: m != "strict"):
        current: list[str] = []
        for method in (m for m in methods if accounting.get(m, "strict") == mode):
            if current and sum(curves[m] for m in [*current, method]) > most:
                panels.append((mode, current))
                current = []
            current.append(method)
        if current:
            panels.append((mode, current))
    return panels


def panel_modes(panels: Sequence[tuple[str, list[str]]]) -> list[str]:
    """Each panel's accounting mode, numbered where a mode fills several panels
    ("strict accounting (1 of 2)")."""
    counts = {mode: sum(p[0] == mode for p in panels) for mode, _ in panels}
    seen: dict[str, int] = {}
    out = []
    for mode, _ in panels:
        seen[mode] = seen.get(mode, 0) + 1
        part = f" ({seen[mode]} of {counts[mode]})" if counts[mode] > 1 else ""
        out.append(f"{mode} accounting{part}")
    return out


def save_figure(fig: plt.Figure, stem: Path) -> list[Path]:
    """Write `stem.png` and `stem.pdf` (with the scale mark of the run, if any) and close."""
    note = current_mark()
    if note:
        _draw_mark(fig, note)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    for path in paths:
        with atomic_output(path) as tmp:
            fig.savefig(tmp, format=path.suffix[1:], dpi=150, bbox_inches="tight",
                        metadata=_metadata(path.suffix))
    plt.close(fig)
    return paths


def _draw_mark(fig: plt.Figure, note: str, height: float = 0.42) -> None:
    """The scale mark in a band added above the figure's content (constrained layout): the
    panels' area, the figure's title and legend keep their place, `height` inches lower."""
    if fig.get_layout_engine() is None:
        fig.set_layout_engine("constrained")
    width, old = fig.get_size_inches()
    fig.set_size_inches(width, old + height)
    shrink = old / (old + height)
    x0, y0, w, h = fig.get_layout_engine().get().get("rect", (0.0, 0.0, 1.0, 1.0))
    fig.get_layout_engine().set(rect=(x0, y0 * shrink, w, h * shrink))
    for text in fig.texts:
        text.set_y(text.get_position()[1] * shrink)
    for legend in fig.legends:
        anchor = legend.get_bbox_to_anchor().transformed(fig.transFigure.inverted())
        legend.set_bbox_to_anchor((anchor.x0, anchor.y1 * shrink), transform=fig.transFigure)
    fig.text(x0 + 0.5 * w, 1.0 - 0.5 * height / (old + height), note.upper(), ha="center",
             va="center", fontsize=10, fontweight="bold", color=MARK_COLOR, gid="scale-mark",
             bbox={"boxstyle": "round,pad=0.35", "facecolor": "#fdecea",
                   "edgecolor": MARK_COLOR})


def _metadata(suffix: str) -> dict[str, Any]:
    """Fixed file metadata, so the same figure gives the same bytes."""
    if suffix == ".pdf":
        return {"CreationDate": None, "ModDate": None}
    return {"Software": None}
