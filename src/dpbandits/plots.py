"""Plot helpers: one colour per algorithm across every figure, PNG + PDF output."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from dpbandits.seeding import stable_key  # noqa: E402

_PALETTE = [tuple(c[:3]) for c in plt.get_cmap("tab20").colors]


def algorithm_color(label: str) -> tuple[float, float, float]:
    """The colour of an algorithm (by its base name, before any ' [' or ' (' suffix)."""
    base = label.split(" [")[0].split(" (")[0]
    return _PALETTE[stable_key(base) % len(_PALETTE)]


def save_figure(fig: plt.Figure, stem: Path) -> list[Path]:
    """Write `stem.png` and `stem.pdf` and close the figure."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    for path in paths:
        fig.savefig(path, dpi=150, bbox_inches="tight")
    plt.close(fig)
    return paths


def series_label(algorithm: str, epsilon: str | float | None) -> str:
    """Legend entry: the algorithm, with its ε when private."""
    if epsilon in (None, "none") or (isinstance(epsilon, float) and epsilon != epsilon):
        return algorithm
    return f"{algorithm}, ε={epsilon}"
