"""Plot helpers: one colour per algorithm across every figure, PNG + PDF output."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from dpbandits.atomic import atomic_output  # noqa: E402
from dpbandits.seeding import stable_key  # noqa: E402

# tab10 first (its ten colours are the preferred ones), then Dark2 and tab20 for larger sets.
_PALETTE = list(dict.fromkeys(
    tuple(float(v) for v in c[:3])
    for name in ("tab10", "Dark2", "tab20")
    for c in plt.get_cmap(name).colors  # type: ignore[attr-defined]
))
_PREFERRED = 10


def algorithm_color(label: str) -> tuple[float, float, float]:
    """The usual colour of an algorithm (by its base name, before any ' [' or ' (' suffix)."""
    base = label.split(" [")[0].split(" (")[0]
    return _PALETTE[stable_key(base) % _PREFERRED]


def distinct_colors(labels: Iterable[str]) -> dict[str, tuple[float, float, float]]:
    """Each label's usual colour, or the next free palette colour where two would collide."""
    used: set[tuple[float, float, float]] = set()
    out = {}
    for label in dict.fromkeys(labels):
        color = algorithm_color(label)
        if color in used:
            color = next((c for c in _PALETTE if c not in used), color)
        used.add(color)
        out[label] = color
    return out


def lighten(color: tuple[float, float, float], amount: float) -> tuple[float, float, float]:
    """`color` blended towards white by `amount` ∈ [0, 1]."""
    return tuple(c + (1.0 - c) * amount for c in color)  # type: ignore[return-value]


def save_figure(fig: plt.Figure, stem: Path) -> list[Path]:
    """Write `stem.png` and `stem.pdf` and close the figure."""
    paths = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    for path in paths:
        with atomic_output(path) as tmp:
            fig.savefig(tmp, format=path.suffix[1:], dpi=150, bbox_inches="tight")
    plt.close(fig)
    return paths


def series_label(algorithm: str, epsilon: str | float | None) -> str:
    """Legend entry: the algorithm, with its ε when private."""
    if epsilon in (None, "none") or (isinstance(epsilon, float) and epsilon != epsilon):
        return algorithm
    return f"{algorithm}, ε={epsilon}"
