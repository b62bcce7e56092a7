"""Generic outputs: cumulative-regret curves per instance and the final-regret table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from dpbandits import stats
from dpbandits.paper.published import PublishedEntry
from dpbandits.paper.tables import mean_sd, write_table
from dpbandits.plots import (
    BAND_TEXT,
    band_handle,
    ci95,
    distinct_colors,
    drawn_points,
    lighten,
    save_figure,
    series_label,
    style_handle,
    variant_marker,
    variant_rank,
)


def _facet_value(item: dict[str, Any], facet: str | None) -> Any:
    if facet is None:
        return None
    return item["instance"].get(facet, item.get(facet))


def regret_curves(
    experiment: str,
    exp: dict[str, Any],
    summary: pd.DataFrame,
    curves: list[dict[str, Any]],
    paper_dir: Path,
    facet: str | None = None,
    epsilons: list[float] | None = None,
) -> list[Path]:
    """Cumulative regret vs t, mean with its 95 % t-interval band, one panel per facet value.

    Project colour per algorithm (a later variant darker, with markers), lighter for smaller ε;
    dashed lines are paper accounting.
    """
    kappa = {int(i): k for i, k in summary.groupby("instance_index")["kappa"].first().items()} \
        if "kappa" in summary else {}
    shown = sorted(
        (c for c in curves if not (epsilons and c["epsilon"] != "none"
                                   and float(c["epsilon"]) not in epsilons)),
        key=lambda c: (c["algorithm"], _epsilon_order(c["epsilon"])),
    )
    colors = distinct_colors((c["algorithm"] for c in shown), exp)
    levels = {a: sorted({c["epsilon"] for c in shown if c["algorithm"] == a}, key=_epsilon_order)
              for a in colors}
    panels = sorted({(_facet_value(c, facet), int(c["instance_index"])) for c in shown},
                    key=lambda p: (p[1]))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.9 * len(panels) + 2.4, 3.5),
                             squeeze=False, layout="constrained")
    trials = sorted({int(c.get("n_trials", 0)) for c in shown})
    for ax, (value, index) in zip(axes[0], panels, strict=True):
        for item in shown:
            if int(item["instance_index"]) != index:
                continue
            drawn = drawn_points(len(item["checkpoints"]))
            t = item["checkpoints"][drawn]
            mean = item["regret_mean"][drawn]
            half = ci95(item["regret_se"][drawn], int(item.get("n_trials", 0)))
            eps_levels = levels[item["algorithm"]]
            rank = eps_levels.index(item["epsilon"])
            color = lighten(colors[item["algorithm"]],
                            0.55 * (len(eps_levels) - 1 - rank) / max(1, len(eps_levels) - 1))
            style = "--" if item.get("accounting") == "paper" else "-"
            marker = variant_marker(item["algorithm"], exp) \
                if variant_rank(item["algorithm"], exp) else None
            label = series_label(item["algorithm"], item["epsilon"])
            ax.plot(t, mean, style, color=color, label=label, lw=1.4, marker=marker, ms=3.5,
                    markevery=0.1)
            if np.isfinite(half).any():
                ax.fill_between(t, mean - half, mean + half, color=color, alpha=0.2, lw=0)
        title = f"{experiment}, {facet} = {value}" if facet else experiment
        if index in kappa:
            title += f" (κ = {kappa[index]:.2f})"
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("round t")
        ax.set_ylim(0, _top(shown, index))
    axes[0][0].set_ylabel("mean cumulative regret")
    handles = {}
    for ax in axes[0]:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    keys = [band_handle(text=f"shaded: {BAND_TEXT} (n = {_n_text(trials)})")]
    if any(c.get("accounting") == "paper" for c in shown):
        keys.append(style_handle("dashed: paper accounting", "--"))
    axes[0][-1].legend([*handles.values(), *keys],
                       [*handles.keys(), *(k.get_label() for k in keys)],
                       fontsize=7, loc="center left", bbox_to_anchor=(1.03, 0.5))
    return save_figure(fig, paper_dir / "figures" / f"{experiment}_regret")


def _top(curves: list[dict[str, Any]], index: int) -> float:
    """Upper y limit of a panel: the highest band, at most 1.3 × the highest mean (wider bands
    are cut at the frame)."""
    means, highs = [0.0], [0.0]
    for c in curves:
        if int(c["instance_index"]) == index:
            half = ci95(c["regret_se"], int(c.get("n_trials", 0)))
            means.append(float(np.max(c["regret_mean"])))
            highs.append(float(np.nanmax(c["regret_mean"] + np.nan_to_num(half))))
    return max(min(max(highs), 1.3 * max(means)), 1.05 * max(means), 1e-9)


def _n_text(values: list[int]) -> str:
    """"10", or "2–10" when the number of trials differs between curves."""
    values = [v for v in values if v] or [0]
    return f"{values[0]}" if len(set(values)) == 1 else f"{min(values)}–{max(values)}"


def _epsilon_order(epsilon: str) -> float:
    return -1.0 if epsilon == "none" else float(epsilon)


def final_regret_table(
    experiment: str,
    exp: dict[str, Any],
    summary: pd.DataFrame,
    curves: list[dict[str, Any]],
    paper_dir: Path,
    facet: str = "S",
    published: PublishedEntry | None = None,
) -> list[Path]:
    """Final cumulative regret, mean ± sd over trials with s.e., next to published values."""
    ref = published.data if published else None
    horizon = int(summary["T"].iloc[0])
    values = (ref or {}).get("values", {}) if (ref or {}).get("horizon") == horizon else {}
    rows = []
    keys = ["algorithm", "accounting", "epsilon", facet]
    for (algorithm, accounting, eps, facet_value), df in summary.groupby(keys, dropna=False):
        regret = df["regret"].to_numpy()
        sd = stats.sample_sd(regret)
        se = stats.standard_error(regret) if len(regret) > 1 else 0.0
        name = algorithm if np.isnan(eps) else f"{algorithm} ε={eps:g}"
        pub = values.get(name, {}).get(float(facet_value)) if values else None
        rows.append({
            "algorithm": name,
            "accounting": accounting if summary["epsilon"].notna().any() else "",
            facet: facet_value,
            "kappa": round(float(df["kappa"].iloc[0]), 2) if "kappa" in df else np.nan,
            "n": len(regret),
            "regret (mean ± sd)": mean_sd(regret.mean(), sd),
            "se": round(se, 1),
            "published": pub,
            "z": round((regret.mean() - pub) / se, 2)
            if pub is not None and sd > 0 else np.nan,
        })
    table = pd.DataFrame(rows)
    caption = f"{experiment}: cumulative regret at T over {int(summary['seed'].nunique())} trials"
    if values:
        caption += f"; published values from {published.source}"
    elif ref:
        caption += f"; no published values at T = {horizon} (published: T = {ref['horizon']})"
    return write_table(table, paper_dir / "tables" / experiment, caption)
