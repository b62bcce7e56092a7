"""Linear-bandit outputs: total regret against the privacy budget (paper Fig. 2) and claims."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.legend_handler import HandlerTuple
from matplotlib.patches import Patch

from dpbandits.errors import ConfigError
from dpbandits.outputs.files import stem as _stem
from dpbandits.paper.published import PublishedEntry
from dpbandits.paper.tables import write_csv, write_table
from dpbandits.plots import (
    LEGEND_WIDTH,
    algorithm_color,
    band_handle,
    ci95,
    figure_legend,
    figure_title,
    log_ticks,
    note_handle,
    plain_ticks,
    published_handle,
    published_marker,
    save_figure,
    variant_marker,
)
from dpbandits.stats import Z95_ONE_SIDED, ratio_of_means, standard_error

ROLES = {
    "PhasedElimination": "nonprivate",
    "LSPhasedElimination": "nonprivate_ls",
    "CentralDPElimination": "central",
    "ShuffleDPElimination": "shuffled",
    "LocalDPElimination": "local",
}


def final_regret_stats(summary: pd.DataFrame, baseline: str = "nonprivate") -> pd.DataFrame:
    """Per (algorithm, ε): n, mean and s.e. of R_T, and the paired ratio to the baseline's mean."""
    base = summary[summary["policy"].map(ROLES) == baseline]
    base_by_seed = base.groupby("seed")["regret"].mean()
    base_mean = float(base_by_seed.mean()) if len(base_by_seed) else math.nan
    rows = []
    for (algorithm, policy, eps), df in summary.groupby(
        ["algorithm", "policy", "epsilon"], dropna=False, sort=True
    ):
        regret = df.groupby("seed")["regret"].mean()
        n = len(regret)
        ratio, ratio_se = _paired_ratio(regret, base_by_seed)
        rows.append(
            {
                "algorithm": algorithm,
                "role": ROLES.get(policy, policy),
                "epsilon": eps,
                "n": n,
                "regret_mean": float(regret.mean()),
                "regret_se": standard_error(regret) if n > 1 else 0.0,
                "ratio_to_nonprivate": ratio,
                "ratio_se": ratio_se,
                "nonprivate_mean": base_mean,
            }
        )
    return pd.DataFrame(rows)


def _paired_ratio(regret: pd.Series, base: pd.Series) -> tuple[float, float]:
    """Ratio of means over the seeds both ran, with its delta-method standard error."""
    seeds = regret.index.intersection(base.index)
    if len(seeds) == 0:
        return math.nan, math.nan
    return ratio_of_means(regret.loc[seeds].to_numpy(float), base.loc[seeds].to_numpy(float))


def regret_vs_epsilon(
    experiment: str,
    exp: dict[str, Any],
    summary: pd.DataFrame,
    curves: list[dict[str, Any]],
    paper_dir: Path,
    figure: str | None = None,
    published: PublishedEntry | None = None,
) -> list[Path]:
    """R_T against ε (ε0 for the local model): mean with its 95 % t-interval over seeds; the
    non-private baselines as horizontal lines with their interval; each private algorithm's
    accounting mode in its legend entry; published values as stars where there are any."""
    stats = final_regret_stats(summary)
    stem = _stem(experiment, "regret_vs_epsilon")
    fig, ax = plt.subplots(figsize=(5.4 + LEGEND_WIDTH, 4.2), layout="constrained")
    exp = _with_policies(exp, summary)
    private = stats[stats["epsilon"].notna()]
    eps_values = sorted(private["epsilon"].unique()) if len(private) else [1.0]
    order = {role: i for i, role in enumerate(ROLES.values())}
    groups = sorted(stats.groupby("algorithm"), key=lambda g: order.get(g[1]["role"].iloc[0], 9))
    modes = dict(summary.groupby("algorithm")["accounting"].first()) \
        if "accounting" in summary else {}
    ref = published.data if published else {}
    values = ref.get("values") or {} if ref.get("horizon") == int(summary["T"].iloc[0]) else {}
    handles = []
    for algorithm, df in groups:
        df = df.sort_values("epsilon")
        color = algorithm_color(algorithm, exp)
        half = np.array([ci95(se, n) for se, n in zip(df["regret_se"], df["n"], strict=True)])
        low, high = df["regret_mean"] - half, df["regret_mean"] + half
        if df["epsilon"].isna().all():
            style = "--" if df["role"].iloc[0] == "nonprivate" else ":"
            name = algorithm if "non-private" in algorithm.lower() \
                else f"{algorithm} (non-private)"
            line = ax.axhline(df["regret_mean"].iloc[0], color=color, ls=style, lw=1.3,
                              gid="reference", label=name)
            if np.isfinite(half[0]):
                ax.axhspan(low.iloc[0], high.iloc[0], color=color, alpha=0.15, lw=0)
            handles.append(((line, Patch(facecolor=color, alpha=0.15)), name))
            continue
        text = f"{algorithm}, {modes.get(algorithm, 'strict')} accounting"
        (line,) = ax.plot(df["epsilon"], df["regret_mean"], "-", marker=variant_marker(
            algorithm, exp), ms=3.5, color=color, label=text)
        ax.fill_between(df["epsilon"], low, high, color=color, alpha=0.25, lw=0)
        handles.append(((line, Patch(facecolor=color, alpha=0.25)), text))
        for eps, value in (values.get(algorithm) or {}).items():
            published_marker(ax, float(eps), float(value), color, f"published: {algorithm}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(min(eps_values) / 1.15, max(eps_values) * 1.15)
    plain_ticks(ax.xaxis, eps_values)
    means = stats["regret_mean"][stats["regret_mean"] > 0]
    low_y, high_y = (means.min() / 1.6, means.max() * 1.6) if len(means) else ax.get_ylim()
    ax.set_ylim(low_y, high_y)  # intervals reaching further are cut at the frame
    plain_ticks(ax.yaxis, log_ticks(low_y, high_y))
    ax.set_xlabel("privacy budget ε (ε0 for the local model)")
    ax.set_ylabel("total regret $R_T$")
    horizon = int(summary["T"].iloc[0])
    figure_title(fig, f"{figure or experiment}: total regret at T = {horizon:,}, mean over "
                      f"{int(stats['n'].max())} seeds")
    handles.append((band_handle(), band_handle().get_label()))
    if values:
        handles.append((published_handle(""), f"published ({published.source})"))
    elif published:
        handles.append((note_handle(""), "published: no plotted values available"))
    figure_legend(fig, handles, handler_map={tuple: HandlerTuple(ndivide=1)})
    paths = save_figure(fig, paper_dir / "figures" / stem)
    table = stats.assign(
        epsilon=stats["epsilon"].map(lambda e: "—" if pd.isna(e) else f"{e:g}"),
        regret_mean=stats["regret_mean"].round(1),
        regret_se=stats["regret_se"].round(1),
        ratio_to_nonprivate=stats["ratio_to_nonprivate"].round(3),
        ratio_se=stats["ratio_se"].round(3),
    ).drop(columns=["nonprivate_mean"])
    caption = (
        f"{experiment}: total pseudo-regret at T = {horizon} (mean and s.e. over seeds; ratio is "
        "the paired ratio of means to the non-private baseline; ε0 for the local model)"
    )
    paths += write_table(table, paper_dir / "tables" / stem, caption)
    runs_path = paper_dir / "tables" / f"{_stem(experiment, 'runs')}.csv"
    columns = [
        c
        for c in (
            "algorithm",
            "policy",
            "epsilon",
            "seed",
            "regret",
            "min_gap",
            "batches",
            "exploit_start",
            "best_eliminated",
            "epsilon_spent",
            "delta_spent",
            "wall_time",
        )
        if c in summary
    ]
    write_csv(summary[columns], runs_path)
    return [*paths, runs_path]


def _with_policies(exp: dict[str, Any], summary: pd.DataFrame) -> dict[str, Any]:
    """`exp` with an algorithm entry (label → policy) for every label of the summary."""
    pairs = summary[["algorithm", "policy"]].drop_duplicates().itertuples(index=False)
    extra = [{"label": label, "policy": policy} for label, policy in pairs]
    return {**exp, "algorithms": [*(exp.get("algorithms") or []), *extra]}


def _lookup(stats: pd.DataFrame, role: str, eps: float) -> pd.Series | None:
    """The statistics row of a role at ε (the non-private role has one row for every ε)."""
    rows = stats[stats["role"] == role]
    if role != "nonprivate":
        rows = rows[np.isclose(rows["epsilon"].astype(float), eps)]
    return None if rows.empty else rows.iloc[0]


def evaluate_claim(stats: pd.DataFrame, check: dict[str, Any]) -> tuple[str, str]:
    """(measured value text, verdict) of one claim check against the regret statistics."""
    kind = check["kind"]
    eps_values = sorted(stats["epsilon"].dropna().unique())
    baseline = check.get("baseline", "nonprivate")
    if not eps_values or stats[stats["role"] == baseline].empty:
        return f"no private or {baseline} runs", "not measured"
    if kind in ("ratio_max", "ratio_min"):
        eps = max(eps_values) if check.get("epsilon") == "max" else float(check["epsilon"])
        sign = 1.0 if kind == "ratio_max" else -1.0
        limit = float(check["max"] if kind == "ratio_max" else check["min"])
        parts, verdicts = [], []
        for role in check["roles"]:
            row = _lookup(stats, role, eps)
            if row is None:
                return f"ε = {eps:g} not in the grid", "not measured"
            r, se = float(row["ratio_to_nonprivate"]), float(row["ratio_se"])
            se = 0.0 if math.isnan(se) else se
            parts.append(f"{role} {r:.3f} ± {se:.3f}")
            # One-sided 95 % bound: supported when the bound clears the limit, contradicted
            # when the opposite bound is past it, inconclusive in between.
            if sign * (r + sign * Z95_ONE_SIDED * se - limit) <= 0:
                verdicts.append("supported")
            elif sign * (r - sign * Z95_ONE_SIDED * se - limit) > 0:
                verdicts.append("not supported")
            else:
                verdicts.append("inconclusive")
        bound = f"≤ {limit:g}" if kind == "ratio_max" else f"≥ {limit:g}"
        text = f"ratio to {baseline} at ε = {eps:g}: " + "; ".join(parts)
        text += f" (need {bound} at one-sided 95 %)"
        for verdict in ("not supported", "inconclusive"):
            if verdict in verdicts:
                return text, verdict
        return text, "supported"
    if kind == "ordering":
        parts, ok = [], True
        for eps in check["epsilons"]:
            rows = [_lookup(stats, role, float(eps)) for role in check["roles"]]
            if any(r is None for r in rows):
                return f"ε = {eps:g} not in the grid", "not measured"
            means = [float(r["regret_mean"]) for r in rows]  # type: ignore[index]
            ok &= all(a <= b for a, b in zip(means, means[1:], strict=False))
            parts.append(f"ε = {eps:g}: " + " ≤ ".join(f"{m:.4g}" for m in means))
        return " · ".join(parts) + f" ({' ≤ '.join(check['roles'])})", _verdict(ok)
    if kind == "decreasing":
        parts, ok = [], True
        for role in check["roles"]:
            rows = stats[stats["role"] == role].sort_values("epsilon")
            if len(rows) < 2:
                return f"{role}: fewer than two ε values", "not measured"
            first, last = rows.iloc[0], rows.iloc[-1]
            ok &= last["regret_mean"] < first["regret_mean"]
            parts.append(
                f"{role} {first['regret_mean']:.4g} (ε={first['epsilon']:g}) → "
                f"{last['regret_mean']:.4g} (ε={last['epsilon']:g})"
            )
        return "; ".join(parts), _verdict(ok)
    raise ValueError(f"unknown claim check kind {kind!r}")


def _verdict(ok: bool) -> str:
    return "supported" if ok else "not supported"


def linear_claims(
    experiment: str,
    exp: dict[str, Any],
    summary: pd.DataFrame,
    curves: list[dict[str, Any]],
    paper_dir: Path,
    published: PublishedEntry | None = None,
) -> list[Path]:
    """Each claim of a published entry (e.g. linear:fig2), what we measured and whether it holds."""
    if published is None:
        raise ConfigError(f"output linear_claims of {experiment} lacks `published`; allowed: a "
                          "published entry with claims, e.g. \"linear:fig2\"")
    ref = published.data
    horizon = int(summary["T"].iloc[0])
    rows = []
    for claim in ref["claims"]:
        baseline = claim["check"].get("baseline", "nonprivate")
        stats = final_regret_stats(summary, baseline)
        if stats[stats["role"] == baseline].empty:
            measured, verdict = f"no {baseline} runs", "not measured"
        else:
            measured, verdict = evaluate_claim(stats, claim["check"])
        if horizon != ref.get("horizon") and verdict != "not measured":
            verdict += f" (at T = {horizon}, paper T = {ref.get('horizon')})"
        rows.append(
            {
                "claim": claim["id"],
                "statement": claim["text"],
                "measured": measured,
                "verdict": verdict,
            }
        )
    caption = f"{experiment}: claims of {published.source} against our runs"
    return write_table(
        pd.DataFrame(rows), paper_dir / "tables" / _stem(experiment, "claims"), caption
    )
