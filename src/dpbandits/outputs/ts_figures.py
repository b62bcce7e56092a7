"""Figures of the AdaPrivate-TS synthetic experiments (paper Sec. 5): NP% against ε (Table 1),
against the sampling rate q (amplification), per component (ablation) and over each grid
(robustness). NP% and its uniform-random floor: docs/ts.md, "Metrics". Every figure names the
paper's table or section, the accounting mode of each series, 95 % t-intervals over seeds, the
uniform-random NP% (where the scale compresses) and the published values as stars or bars.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from dpbandits.plots import (
    LEGEND_WIDTH,
    PUBLISHED_BAR,
    algorithm_color,
    distinct_colors,
    epsilon_colors,
    errorbar_handle,
    figure_legend,
    figure_title,
    note_handle,
    pack_panels,
    panel_modes,
    plain_ticks,
    published_marker,
    reference_line,
    save_figure,
    style_handle,
    trials_text,
    uniform_line,
    variant_marker,
)


def np_label(reference: str) -> str:
    """Axis label defining NP% against the reference (docs/ts.md, "Metrics")."""
    return f"NP% = 100 · reward / reward of {reference}\n(expected reward, same seed)"


def uniform_np(metrics: pd.DataFrame) -> float:
    """Mean NP% of choosing uniformly at random: 100 · R_rand / R_ref over (instance, seed)."""
    per_trial = metrics.drop_duplicates(["instance_index", "seed"])
    return float((100.0 * per_trial["random_reward"] / per_trial["ref_reward"]).mean())


def accounting_of(metrics: pd.DataFrame, column: str = "grid_of") -> dict[str, str]:
    """The accounting mode of each method (label) of the runs."""
    return {str(k): str(v) for k, v in metrics.groupby(column)["accounting"].first().items()}


def _dodge(count: int, width: float = 0.15) -> list[float]:
    """Multiplicative x offsets spreading `count` series over `width` decades of a log axis."""
    step = min(0.03, width / max(1, count - 1))
    return [10 ** ((i - (count - 1) / 2) * step) for i in range(count)]


def _entry(handles: dict[str, Any], artist: Any, label: str) -> None:
    handles.setdefault(label, artist)


def _range_claims(published: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [c for c in (published or {}).get("claims", [])
            if c.get("kind") == "range" and c.get("algorithms") and c.get("epsilons")]


def np_figure(experiment: str, cells: pd.DataFrame, methods: list[str], metrics: pd.DataFrame,
              paper_dir: Path, reference: str, exp: dict[str, Any] | None = None,
              figure: str | None = None, published: dict[str, Any] | None = None) -> list[Path]:
    """NP% against ε with 95 % t-intervals, panels of at most six curves of one accounting mode:
    default cell (solid) and best cell (dotted, open marker) per private method; non-private
    methods, LinTS = 100 and uniform random choice as reference lines; published ranges as bars."""
    private = cells[cells["epsilon"].notna()]
    shown = [m for m in methods if not private[private["method"] == m].empty]
    tuned_apart = {m: bool((private[private["method"] == m]["tuned"]
                            & ~private[private["method"] == m]["default"]).any()) for m in shown}
    panels = pack_panels(shown, {m: 1 + tuned_apart[m] for m in shown}, accounting_of(metrics))
    ncols = min(2, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, layout="constrained",
                             figsize=(4.4 * ncols + LEGEND_WIDTH, 3.3 * nrows + 0.5))
    epsilons = sorted(private["epsilon"].unique())
    floor = uniform_np(metrics)
    colors = distinct_colors(methods, exp)
    handles: dict[str, Any] = {}
    bars = False
    for ax, (_, chosen), title in zip(axes.flat, panels, panel_modes(panels), strict=False):
        offsets = dict(zip(chosen, _dodge(len(chosen)), strict=True))
        for method in chosen:
            sub = private[private["method"] == method]
            color, marker = colors[method], variant_marker(method, exp)
            for which, style, face in (("default", "-", color), ("tuned", ":", "white")):
                line = sub[sub[which] & ~(sub["default"] & (which == "tuned"))]
                if line.empty:
                    continue
                line = line.sort_values("epsilon")  # a best cell that is the default: once
                drawn = ax.errorbar(line["epsilon"] * offsets[method], line["np"],
                                    yerr=line["np_ci"], fmt=style, marker=marker, color=color,
                                    mfc=face, ms=4, lw=1, capsize=2)
                if which == "default":
                    drawn.lines[0].set_label(method)
                    _entry(handles, drawn.lines[0], method)
        for method in methods:
            sub = cells[(cells["method"] == method) & cells["epsilon"].isna() & cells["default"]]
            if len(sub):
                what = "reference" if sub["label"].iloc[0] == reference else "non-private"
                text = f"{method} ({what})"
                _entry(handles, reference_line(ax, sub["np"].iloc[0], text, colors[method], "--"),
                       text)
        floor_line = uniform_line(ax, floor)
        if floor_line is not None:
            _entry(handles, floor_line, floor_line.get_label())
        for claim in _range_claims(published):
            for method in (m for m in claim["algorithms"] if m in chosen):
                color = colors[method]
                for eps in (e for e in claim["epsilons"] if e in epsilons):
                    ax.plot([eps * offsets[method]] * 2, [claim["low"], claim["high"]],
                            color=color, label=f"published: {method}", **PUBLISHED_BAR)
                    bars = True
        ax.set_xscale("log")
        if epsilons:
            pad = 1.25 * max([*offsets.values(), 1.0])
            ax.set_xlim(min(epsilons) / pad, max(epsilons) * pad)
            plain_ticks(ax.xaxis, epsilons)
        ax.set_xlabel("privacy budget ε")
        ax.set_title(title, fontsize=9)
    for ax in axes.flat[len(panels):]:
        ax.set_axis_off()
    for row in axes:
        row[0].set_ylabel(np_label(reference))
    n = trials_text(cells["n"])
    figure_title(fig, f"{figure or experiment}: NP% per method and ε (error bars: 95 % t-interval "
                      f"over {n} seeds)")
    entries = list((h, t) for t, h in handles.items())
    if any(tuned_apart.values()):
        entries += [(k, k.get_label()) for k in (
            style_handle("solid, filled: default grid cell", "-", "o"),
            style_handle("dotted, open: best grid cell", ":", "o", mfc="white"))]
    if bars:
        entries.append((Line2D([], [], color="0.5", lw=6, alpha=0.35),
                        "published range (paper text)"))
    elif published:
        entries.append((note_handle(""), "published: no per-cell values"))
    figure_legend(fig, entries)
    return save_figure(fig, paper_dir / "figures" / f"{experiment}_np")


def amplification_figure(experiment: str, table: pd.DataFrame, metrics: pd.DataFrame,
                         exp: dict[str, Any], base: str, amplified: str, reference: str,
                         figure: str | None = None,
                         published: dict[str, Any] | None = None) -> plt.Figure:
    """One panel per ε: NP% of the Amp grid against q (error bars), the base as a dashed line
    with its interval, the other Amp variants as single points (right of their q); each series
    names its accounting mode; the published best q as a shaded span."""
    epsilons = sorted(table["ε"].unique())
    qs = sorted(table["q"].dropna().unique())
    step = 0.02 * max(qs[-1] - qs[0], 0.2) if qs else 0.0
    modes = accounting_of(metrics, "algorithm")
    ncols = min(len(epsilons), 4)
    nrows = -(-len(epsilons) // ncols)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, layout="constrained",
                             figsize=(3.3 * ncols + LEGEND_WIDTH, 3.2 * nrows + 0.5))
    amp_color, base_color = algorithm_color(amplified, exp), algorithm_color(base, exp)
    floor = uniform_np(metrics)
    best = {float(c["epsilon"]): c.get("values") or [c["value"]]
            for c in (published or {}).get("claims", []) if c.get("kind") == "best"}
    handles: dict[str, Any] = {}
    for ax, eps in zip(axes.flat, epsilons, strict=False):
        grid = table[table["_grid"] & (table["ε"] == eps)].sort_values("q")
        if len(grid):
            text = f"{amplified} ({modes.get(grid['_label'].iloc[0], 'paper')} accounting)"
            drawn = ax.errorbar(grid["q"], grid["_mean"], yerr=grid["_half"], fmt="-",
                                marker=variant_marker(amplified, exp), ms=4, capsize=2, lw=1.2,
                                color=amp_color)
            drawn.lines[0].set_label(text)
            _entry(handles, drawn.lines[0], text)
            first = grid.iloc[0]
            text = f"{base}, no subsampling ({modes.get(base, 'strict')} accounting)"
            line = reference_line(ax, first["_base"], text, base_color, "--")
            if np.isfinite(first["_base_half"]):
                ax.axhspan(first["_base"] - first["_base_half"],
                           first["_base"] + first["_base_half"], color=base_color, alpha=0.12,
                           lw=0)
            _entry(handles, line, text)
        others = table[~table["_grid"] & (table["ε"] == eps)]
        for k, (_, row) in enumerate(others.iterrows(), start=1):
            color = algorithm_color(row["_label"], exp)
            text = f"{row['_label']} ({modes.get(row['_label'], 'strict')} accounting)"
            drawn = ax.errorbar([row["q"] + k * step], [row["_mean"]], yerr=[row["_half"]],
                                fmt="none", capsize=2, color=color)
            (point,) = ax.plot([row["q"] + k * step], [row["_mean"]], ls="none", ms=5,
                               color=color, marker=variant_marker(row["_label"], exp),
                               label=text)
            _entry(handles, point, text)
        text = f"{reference} (reference) = 100"
        _entry(handles, reference_line(ax, 100.0, text), text)
        floor_line = uniform_line(ax, floor)
        if floor_line is not None:
            _entry(handles, floor_line, floor_line.get_label())
        if float(eps) in best:
            low, high = min(best[float(eps)]), max(best[float(eps)])
            ax.axvspan(low - step, high + step, color="0.6", alpha=0.25, lw=0,
                       gid="published", label="published best q")
        if qs:
            plain_ticks(ax.xaxis, qs)
            pad = 0.08 * max(qs[-1] - qs[0], 0.2)
            ax.set_xlim(qs[0] - pad, qs[-1] + pad + step * (len(table) > 0))
        ax.set_xlabel("Poisson sampling rate q")
        ax.set_title(f"ε = {eps:g}", fontsize=9)
    for ax in axes.flat[len(epsilons):]:
        ax.set_axis_off()
    for row in axes:
        row[0].set_ylabel(np_label(reference))
    figure_title(fig, f"{figure or experiment}: amplification by Poisson subsampling")
    key = errorbar_handle(trials_text(table["_n"]))
    entries = [(h, t) for t, h in handles.items()]
    entries += [(key, key.get_label())]
    if best:
        entries.append((plt.Rectangle((0, 0), 1, 1, color="0.6", alpha=0.25),
                        "published best q (paper text)"))
    figure_legend(fig, entries)
    return fig


def ablation_figure(ax: Any, table: pd.DataFrame, metrics: pd.DataFrame, exp: dict[str, Any],
                    reference: str, published: dict[str, Any] | None = None) -> list[Any]:
    """NP% per configuration as points with 95 % t-intervals on an axis spanning the data (not
    from 0), the reference and uniform-random lines, the published total gain as a star."""
    modes = accounting_of(metrics, "algorithm")
    labels = [f"{c}\n({modes.get(c, 'strict')} accounting)" for c in table["configuration"]]
    pos = np.arange(len(table))
    entries: list[Any] = []
    for y, (_, row) in zip(pos, table.iterrows(), strict=True):
        color = algorithm_color(row["configuration"], exp)
        ax.errorbar([row["_mean"]], [y], xerr=[row["_half"]], fmt="o", color=color, ms=6,
                    capsize=3)
        ax.text(row["_mean"], y - 0.22, f"{row['_mean']:.1f}", ha="center", va="bottom",
                fontsize=7)
    ax.set_yticks(pos, labels, fontsize=7)
    ax.invert_yaxis()
    entries.append(reference_line(ax, 100.0, f"{reference} (reference) = 100", vertical=True))
    floor = uniform_line(ax, uniform_np(metrics), vertical=True)
    if floor is not None:
        entries.append(floor)
    for claim in (published or {}).get("claims", []):
        if claim.get("kind") == "gain" and "value" in claim:
            base = table[table["configuration"] == claim["over"]]
            row = np.flatnonzero(table["configuration"].to_numpy() == claim["algorithm"])
            if len(base) and len(row):
                value = float(base["_mean"].iloc[0]) + float(claim["value"])
                entries.append(published_marker(
                    ax, value, row[0], "0.6",
                    f"published: {claim['algorithm']} = {claim['over']} + {claim['value']:g} pp"))
    return entries


def grid_panel(ax: Any, sub: pd.DataFrame, group: str, exp: dict[str, Any]) -> list[Any]:
    """One robustness grid as points with 95 % t-intervals: one varying parameter → a point per
    value; two → a series per value of the second (one hue each) against the first."""
    params = pd.DataFrame(list(sub["_params"]), index=sub.index)
    varying = [k for k in params.columns if params[k].nunique(dropna=False) > 1]
    fixed = [f"{k} = {params[k].iloc[0]:g}" for k in params.columns if k not in varying]
    entries: list[Any] = []
    if len(varying) == 2:
        outer, inner = varying
        inner_values = sorted(params[inner].unique())
        outer_values = sorted(params[outer].unique())
        hues = epsilon_colors(inner_values)
        width = 0.5 / len(inner_values)
        for j, value in enumerate(inner_values):
            rows = sub[params[inner] == value]
            keys = params.loc[rows.index, outer].map(outer_values.index).to_numpy(float)
            color = hues[f"{float(value):g}"]
            drawn = ax.errorbar(keys + (j - (len(inner_values) - 1) / 2) * width, rows["_mean"],
                                yerr=rows["_half"], fmt="o", color=color, ms=5, capsize=2)
            drawn.lines[0].set_label(f"{inner} = {value:g}")
            entries.append(drawn.lines[0])
        ax.set_xticks(range(len(outer_values)), [f"{v:g}" for v in outer_values])
        ax.set_xlabel(outer)
    else:
        key = varying[0] if varying else None
        order = params[key].sort_values().index if key else sub.index
        rows = sub.loc[order]
        ax.errorbar(np.arange(len(rows)), rows["_mean"], yerr=rows["_half"], fmt="o",
                    color=algorithm_color(group, exp), ms=5, capsize=2)
        ax.set_xticks(range(len(rows)), [f"{v:g}" for v in params.loc[order, key]]
                      if key else list(rows["setting"]))
        ax.set_xlabel(key or "setting")
    ax.set_xlim(-0.6, ax.get_xlim()[1] + 0.3)
    ax.set_title(group + (f" ({', '.join(fixed)})" if fixed else ""), fontsize=8)
    return entries


def robustness_published(ax: Any, sub: pd.DataFrame, published: dict[str, Any] | None) \
        -> list[Any]:
    """The published statements on one grid: lower bounds as lines, the best cell as a star."""
    params = pd.DataFrame(list(sub["_params"]), index=sub.index)
    entries: list[Any] = []
    for claim in (published or {}).get("claims", []):
        grid = claim.get("grid")
        if not isinstance(grid, str) or grid not in params or params[grid].nunique() < 2:
            continue
        if claim.get("kind") == "range" and "low" in claim:
            entries.append(reference_line(ax, claim["low"], f"published: all ≥ {claim['low']:g}",
                                          "0.5", (0, (4, 2))))
            entries[-1].set_gid("published")
        if claim.get("kind") == "best" and "np" in claim:
            order = sorted(params[grid].unique())
            x = order.index(claim["value"]) if claim["value"] in order else None
            if x is not None:
                ax.errorbar([x + 0.25], [claim["np"]], yerr=[claim.get("sd", 0.0)], fmt="none",
                            ecolor="0.5", capsize=2)
                entries.append(published_marker(
                    ax, x + 0.25, claim["np"], "0.6",
                    f"published: {grid} = {claim['value']:g}, {claim['np']:g} ± "
                    f"{claim.get('sd', 0):g} (sd)"))
    return entries


def legend_entries(artists: list[Any], n: str) -> list[tuple[Any, str]]:
    """(handle, text) for each distinct label of `artists`, then the error-bar key."""
    out: dict[str, Any] = {}
    for artist in artists:
        out.setdefault(artist.get_label(), artist)
    key = errorbar_handle(n)
    return [*((h, t) for t, h in out.items()), (key, key.get_label())]

