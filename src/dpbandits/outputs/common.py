"""Generic outputs: cumulative-regret curves per instance and the final-regret table."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from dpbandits import stats
from dpbandits.paper.published import PublishedEntry
from dpbandits.paper.tables import mean_sd, write_table
from dpbandits.plots import (
    LEGEND_WIDTH,
    QUARTILE_TEXT,
    band_handle,
    distinct_colors,
    drawn_points,
    epsilon_colors,
    epsilon_order,
    figure_legend,
    figure_title,
    note_handle,
    published_handle,
    published_marker,
    save_figure,
    trials_text,
    variant_marker,
    variant_rank,
)

PANEL_WIDTH, PANEL_HEIGHT = 3.6, 2.9  # inches of one regret panel
PANELS_PER_ROW = 4


def _facet_value(item: dict[str, Any], facet: str | None) -> Any:
    if facet is None:
        return None
    return item["instance"].get(facet, item.get(facet))


def _code_state(label: str, exp: dict[str, Any]) -> str | None:
    """The code state a label runs (its params, else its policy's default), if it has one."""
    from dpbandits.policies import get_policy_class

    for entry in exp.get("algorithms") or []:
        if entry.get("label", entry["policy"]) == label:
            state = (entry.get("params") or {}).get("code_state")
            return state or get_policy_class(entry["policy"]).defaults.get("code_state")
    return None


def panel_heading(label: str | None, accounting: str | None, exp: dict[str, Any]) -> str:
    """What a panel of private runs holds: the algorithm, its code state and accounting mode."""
    if label is None:
        return "non-private algorithms"
    state = _code_state(label, exp)
    parts = [f"code state {state}"] if state else []
    return f"{label}\n" + " · ".join([*parts, f"{accounting} accounting"])


def _published_values(published: PublishedEntry | None, horizon: int) \
        -> tuple[dict[str, dict[float, float]], str | None]:
    """The published end values at this horizon, and a note when they are at another one."""
    ref = published.data if published else None
    if not ref:
        return {}, None
    if ref.get("horizon") != horizon:
        return {}, f"published values at T = {ref.get('horizon')}, not shown (run T = {horizon})"
    return {name: {float(k): float(v) for k, v in row.items()}
            for name, row in (ref.get("values") or {}).items()}, None


def regret_curves(
    experiment: str,
    exp: dict[str, Any],
    summary: pd.DataFrame,
    curves: list[dict[str, Any]],
    paper_dir: Path,
    facet: str | None = None,
    epsilons: list[float] | None = None,
    figure: str | None = None,
    published: PublishedEntry | None = None,
) -> list[Path]:
    """Cumulative regret vs t: median over trials with the interquartile band (robust to diverged
    runs), one row of panels per facet value: the non-private algorithms, then one panel per
    private label (one code state, one accounting mode) with a hue per ε; published end values
    as stars at T."""
    shown = sorted(
        (c for c in curves if not (epsilons and c["epsilon"] != "none"
                                   and float(c["epsilon"]) not in epsilons)),
        key=lambda c: (c["algorithm"], epsilon_order(c["epsilon"])),
    )
    missing = [c["algorithm"] for c in shown if "regret_q50" not in c]
    if missing:
        raise ValueError(f"curves of {experiment} lack the median (regret_q50) for "
                         f"{missing[0]!r}; allowed: curves.h5 written by dpbandits.aggregate "
                         "with quartiles (re-run the aggregation)")
    kappa = {int(i): k for i, k in summary.groupby("instance_index")["kappa"].first().items()} \
        if "kappa" in summary else {}
    horizon = int(summary["T"].max()) if "T" in summary else int(shown[0]["checkpoints"][-1])
    values, apart = _published_values(published, horizon)
    baseline_colors = distinct_colors(
        (c["algorithm"] for c in shown if c["epsilon"] == "none"), exp)
    hues = epsilon_colors(c["epsilon"] for c in shown)
    declared = [e.get("label", e["policy"]) for e in exp.get("algorithms") or []]
    private = sorted(dict.fromkeys(c["algorithm"] for c in shown if c["epsilon"] != "none"),
                     key=lambda a: declared.index(a) if a in declared else len(declared))
    groups: list[str | None] = ([None] if baseline_colors else []) + private
    instances = sorted({int(c["instance_index"]) for c in shown})
    panels = [(index, group) for index in instances for group in groups]
    rows_per_instance = -(-len(groups) // PANELS_PER_ROW)
    ncols = -(-len(groups) // rows_per_instance)  # rows of about equal length
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, layout="constrained",
                             figsize=(PANEL_WIDTH * ncols + LEGEND_WIDTH,
                                      PANEL_HEIGHT * nrows + 0.5))
    trials = sorted({int(c.get("n_trials", 0)) for c in shown})
    stars = False
    for ax, (index, group) in zip(axes.flat, panels, strict=False):
        items = [c for c in shown if int(c["instance_index"]) == index
                 and (c["algorithm"] == group if group else c["epsilon"] == "none")]
        tops = [0.0]
        for item in items:
            eps = item["epsilon"]
            color = baseline_colors[item["algorithm"]] if eps == "none" \
                else hues[f"{float(eps):g}"]
            label = item["algorithm"] if eps == "none" else f"ε = {float(eps):g}"
            drawn = drawn_points(len(item["checkpoints"]))
            t = item["checkpoints"][drawn]
            marker = variant_marker(item["algorithm"], exp) \
                if eps == "none" and variant_rank(item["algorithm"], exp) else None
            ax.plot(t, item["regret_q50"][drawn], "-", color=color, lw=1.5, label=label,
                    marker=marker, ms=3.5, markevery=0.1)
            ax.fill_between(t, item["regret_q25"][drawn], item["regret_q75"][drawn],
                            color=color, alpha=0.2, lw=0)
            tops.append(float(np.max(item["regret_q75"])))
            name = item["algorithm"] if eps == "none" \
                else f"{item['algorithm']} ε={float(eps):g}"
            value = values.get(name, {}).get(float(_facet_value(item, facet) or 0.0)) \
                if facet else None
            if value is not None:
                published_marker(ax, horizon, value, color, f"published: {name}")
                tops.append(value)
                stars = True
        value = _facet_value(items[0], facet) if items and facet else None
        where = f"{facet} = {value:g}" if value is not None else ""
        if index in kappa:
            where += f" (κ = {kappa[index]:.2f})"
        accounting = items[0].get("accounting") if items else None
        ax.set_title(" · ".join(p for p in (where, panel_heading(group, accounting, exp)) if p),
                     fontsize=8)
        ax.set_xlabel("round t")
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.set_ylim(0, 1.08 * max(tops) or 1.0)
    for ax in axes.flat[len(panels):]:
        ax.set_axis_off()
    for row in axes:
        row[0].set_ylabel("cumulative regret")
    n = trials_text(trials)
    only = {_facet_value(c, facet) for c in shown} if facet else set()
    where = f", {facet} = {next(iter(only)):g}" if len(only) == 1 else ""
    figure_title(fig, f"{figure or experiment}{where}: cumulative regret, median and "
                      f"interquartile range over {n} trials")
    entries: list[tuple[Any, str]] = [
        (Line2D([], [], color=c, lw=1.5, ms=3.5, marker=variant_marker(a, exp)
                if variant_rank(a, exp) else None), a) for a, c in baseline_colors.items()]
    entries += [(Line2D([], [], color=c, lw=1.5), f"ε = {e}") for e, c in hues.items()]
    entries.append((band_handle(text=""), f"{QUARTILE_TEXT} (n = {n})"))
    if stars:
        source = textwrap.fill(f"({published.source})", 48) if published else ""
        entries.append((published_handle(""), f"published value at T = {horizon:,}\n{source}"))
    if apart:
        entries.append((note_handle(""), apart))
    figure_legend(fig, entries)
    return save_figure(fig, paper_dir / "figures" / f"{experiment}_regret")


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
