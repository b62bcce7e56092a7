"""Every figure the pipeline makes, drawn from the tables a real smoke run wrote (summary.csv,
curves.h5): at most six curves a panel, the legend beside the panels with the colours of what it
names, the paper's figure in the title, the accounting mode named, published values drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from figure_checks import (
    all_text,
    figure_title,
    legend_colour_mismatches,
    legend_overlaps,
    most_curves,
    narrowest_panel,
    published_artists,
)

from dpbandits.aggregate import load_curves
from dpbandits.config import load_config
from dpbandits.outputs import make_outputs
from dpbandits.paper.published import load_published, published_entry

from conftest import REPO, SMOKE_PAPER, SMOKE_RESULTS

FIGURE_KINDS = ("regret_curves", "regret_vs_epsilon", "ctr_curve", "ts_table1",
                "ts_amplification", "ts_ablation", "ts_robustness")
PUBLISHED = load_published((REPO / "paper" / "published").glob("*.yaml"))


def drawn_figures(workdir: Path, monkeypatch: pytest.MonkeyPatch, experiment: str,
                  exp: dict[str, Any], config: dict[str, Any],
                  published: dict[str, dict[str, Any]] = PUBLISHED) -> list[plt.Figure]:
    """The figures `make_outputs` draws for one experiment from the run's tables."""
    kept: list[plt.Figure] = []
    close = plt.close

    def keep(fig=None):  # noqa: ANN001, ANN202
        kept.append(fig)
        close(fig)

    monkeypatch.setattr(plt, "close", keep)
    results = workdir / SMOKE_RESULTS / experiment
    figures_only = {**exp, "outputs": [o for o in exp["outputs"] if o["kind"] in FIGURE_KINDS]}
    make_outputs(experiment, figures_only, pd.read_csv(results / "summary.csv"),
                 load_curves(results / "curves.h5"), workdir / SMOKE_PAPER / "redrawn",
                 published, config=config, paper_config=REPO / "config" / "config.yaml")
    monkeypatch.setattr(plt, "close", close)
    return [f for f in kept if f is not None]


def test_every_figure_of_a_smoke_run_passes_the_reviewer_checks(
        smoke_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_config(smoke_run / "smoke.yaml")
    checked, most = 0, 0
    for name, exp in config["experiments"].items():
        if not (smoke_run / SMOKE_RESULTS / name / "summary.csv").exists():
            continue
        specs = [o for o in exp["outputs"] if o["kind"] in FIGURE_KINDS]
        figures = drawn_figures(smoke_run, monkeypatch, name, exp, config)
        assert len(figures) == len(specs), name
        for spec, fig in zip(specs, figures, strict=True):
            where = f"{name} ({spec['kind']})"
            assert most_curves(fig) <= 6, where
            most = max(most, most_curves(fig))
            assert legend_overlaps(fig) == [], where
            assert legend_colour_mismatches(fig) == [], where
            assert narrowest_panel(fig) > 2.3, where
            assert figure_title(fig).startswith(spec["figure"]), where
            assert "accounting" in all_text(fig), where
            checked += 1
    assert checked >= 10 and most >= 3  # curves counted (one ε: Table 1 has points only)


def test_published_end_values_are_drawn_where_the_horizons_agree(
        smoke_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Figure 1(b) at the smoke run's T: its published values as stars at T (the same values
    placed at T = 300 only to check the drawing); at the paper's T = 5000 none are drawn."""
    config = load_config(smoke_run / "smoke.yaml")
    exp = config["experiments"]["glm_fig1_probit"]
    horizon = int(exp["instance"]["horizon"])
    entry = published_entry(PUBLISHED, "glm:fig1_probit")
    (paper_scale,) = drawn_figures(smoke_run, monkeypatch, "glm_fig1_probit", exp, config)
    assert published_artists(paper_scale) == []
    moved = {**PUBLISHED, "glm:fig1_probit": {**entry.data, "horizon": horizon}}
    (fig,) = drawn_figures(smoke_run, monkeypatch, "glm_fig1_probit", exp, config, moved)
    stars = {(s.get_label(), float(s.get_xdata()[0]), float(s.get_ydata()[0]))
             for s in published_artists(fig)}
    shown = {"GLOC", "GLM-UCB", "RS-GLinUCB (ab8fd16)", "Private-GLM (ab8fd16) ε=2",
             "Private-GLM (ab8fd16) ε=8"}
    assert stars == {(f"published: {name}", horizon, entry.data["values"][name][3.0])
                     for name in shown}
