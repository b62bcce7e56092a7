"""Real-data outputs of the AdaPrivate-TS paper (Sec. 5, MovieLens-25M and Jester; metrics in
docs/ts.md, "Metrics"; data in docs/realdata.md): CTR per ε and algorithm with the paper's
claims beside our numbers, and the CTR-over-time figure; captions name the data's archives and
feature mode (docs/realdata.md, "Provenance")."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from dpbandits import stats
from dpbandits.config import format_epsilon
from dpbandits.data.provenance import data_note
from dpbandits.paper.published import PublishedEntry
from dpbandits.paper.tables import write_table
from dpbandits.plots import (
    LEGEND_WIDTH,
    MOST_CURVES,
    PUBLISHED_BAR,
    band_handle,
    ci95,
    comparable,
    distinct_colors,
    drawn_points,
    figure_legend,
    figure_title,
    pack_panels,
    panel_modes,
    reference_line,
    save_figure,
)


def t_half_width(values: np.ndarray) -> float:
    """Half-width t_{0.975,n−1}·sd/√n of the 95 % t-interval of the mean; 0 for a single trial."""
    return stats.t_half_width(values) if len(values) > 1 else 0.0


def _base(summary: pd.DataFrame) -> pd.Series:
    """Name an algorithm is known by in claims: its grid base label, else its label."""
    if "grid_of" in summary:
        return summary["grid_of"].fillna(summary["algorithm"])
    return summary["algorithm"]


def ctr_frame(summary: pd.DataFrame, reference: str | None = None) -> pd.DataFrame:
    """One row per (algorithm, ε): CTR mean and CI over trials, % of the reference's CTR on the
    same seeds, accept rate and replay steps."""
    df = summary.assign(base=_base(summary), ctr_trial=summary["mean_reward"])
    ref = None
    if reference is not None:
        rows = df[df["algorithm"] == reference]
        if rows.empty:
            rows = df[df["base"] == reference]
        ref = rows.groupby("seed")["ctr_trial"].mean()
    out = []
    for (label, base, eps), g in df.groupby(["algorithm", "base", "epsilon"], dropna=False):
        ctr = g["ctr_trial"].to_numpy()
        row = {"algorithm": label, "base": base, "epsilon": eps, "n": len(ctr),
               "ctr": float(ctr.mean()), "ci95": t_half_width(ctr)}
        if ref is not None and not ref.empty:
            paired = g.set_index("seed")["ctr_trial"].reindex(ref.index).dropna()
            row["pct_of_ref"] = float(100 * paired.sum() / ref.loc[paired.index].sum()) \
                if len(paired) else np.nan
        for col in ("accept_rate", "replay_steps"):
            row[col] = float(g[col].mean()) if col in g else np.nan
        out.append(row)
    return pd.DataFrame(out).sort_values(["epsilon", "algorithm"], na_position="first")


def best_per_base(frame: pd.DataFrame) -> pd.DataFrame:
    """The best configuration of each base algorithm at each ε (grid search; docs/ts.md,
    "Metrics")."""
    idx = frame.groupby(["base", "epsilon"], dropna=False)["ctr"].idxmax()
    return frame.loc[idx.to_numpy()]


def _ctr_at(best: pd.DataFrame, name: str, eps: float | None) -> float:
    rows = best[best["base"] == name]
    rows = rows[rows["epsilon"].isna()] if eps is None else rows[np.isclose(rows["epsilon"], eps)]
    return float(rows["ctr"].iloc[0]) if len(rows) else np.nan


def _crossing(curves: list[dict[str, Any]], eps: float, algorithm: str, over: str) -> float:
    """First counted round from which `algorithm`'s running CTR stays ≥ that of `over`."""
    tag = format_epsilon(eps)
    found = {c["algorithm"]: c for c in curves if c["epsilon"] == tag}
    if algorithm not in found or over not in found:
        return np.nan
    a, b = found[algorithm], found[over]
    t = a["checkpoints"]
    below = np.flatnonzero(a["reward_mean"] < b["reward_mean"])
    if not len(below):
        return float(t[0])
    return float(t[below[-1] + 1]) if below[-1] + 1 < len(t) else np.nan


def evaluate_claim(claim: dict[str, Any], best: pd.DataFrame,
                   curves: list[dict[str, Any]]) -> dict[str, Any]:
    """Our number for one published claim and whether its direction holds."""
    kind = claim["kind"]
    row: dict[str, Any] = {"claim": claim["text"], "published": claim.get("published", "")}
    if kind == "range":
        values = [_ctr_at(best, a, claim["epsilon"]) for a in claim["algorithms"]]
        values = [v for v in values if np.isfinite(v)]
        if values:
            row["ours"] = f"{min(values):.3f}–{max(values):.3f}"
            row["holds"] = bool(min(values) >= claim["low"] and max(values) <= claim["high"])
    elif kind == "best":
        winners = []
        for eps in claim["epsilons"]:
            scores = {a: _ctr_at(best, a, eps) for a in claim["among"]}
            scores = {a: v for a, v in scores.items() if np.isfinite(v)}
            if scores:
                winners.append(f"ε={eps:g}: {max(scores, key=scores.get)}")
        if winners:
            row["ours"] = "; ".join(winners)
            row["holds"] = all(w.endswith(": " + claim["algorithm"]) for w in winners)
    elif kind == "gain":
        overs = claim["over"] if isinstance(claim["over"], list) else [claim["over"]]
        epsilons = claim.get("epsilons", [claim.get("epsilon")])
        gains = []
        for eps in epsilons:
            a = _ctr_at(best, claim["algorithm"], eps)
            for o in overs:
                b = _ctr_at(best, o, eps)
                if np.isfinite(a) and np.isfinite(b) and b > 0:
                    gains.append((100 * (a / b - 1), 100 * (a - b), eps, o))
        if gains:
            rel, pts, eps, o = max(gains)
            where = f" (ε={eps:g}, over {o})" if len(gains) > 1 else ""
            row["ours"] = f"{rel:+.1f}% relative, {pts:+.1f} points{where}"
            row["holds"] = bool(rel > 0)
    elif kind == "crossing":
        step = _crossing(curves, claim["epsilon"], claim["algorithm"], claim["over"])
        if np.isfinite(step):
            row["ours"] = f"from counted round {step:.0f}"
            row["holds"] = True
        else:
            row["ours"] = "never"
            row["holds"] = False
    else:
        raise ValueError(f"unknown claim kind {kind!r}")
    row.setdefault("ours", "not run")
    row.setdefault("holds", "")
    return row


def log_row(summary: pd.DataFrame, columns: pd.Index) -> dict[str, Any]:
    """The table's first row: the log's own CTR over the replayed events, what uniform choice
    expects (docs/realdata.md, "Replay"), at its accept rate 1/K."""
    row: dict[str, Any] = dict.fromkeys(columns, "")
    row.update({"algorithm": "the log (uniform choice)", "ε": "—",
                "CTR (mean ± 95% CI)": f"{float(np.nanmean(summary['log_ctr'])):.4f}"})
    if "K" in summary and summary["K"].notna().any():
        row["accept rate"] = round(1.0 / float(np.nanmean(summary["K"])), 3)
    return row


def ctr_table(
    experiment: str,
    exp: dict[str, Any],
    summary: pd.DataFrame,
    curves: list[dict[str, Any]],
    paper_dir: Path,
    reference: str | None = "LinTS",
    published: PublishedEntry | None = None,
) -> list[Path]:
    """CTR (mean ± 95% CI over trials) per algorithm and ε, % of the reference, accept rate;
    with `published`, a second table of the paper's claims next to ours."""
    frame = ctr_frame(summary, reference)
    table = pd.DataFrame({
        "algorithm": frame["algorithm"],
        "ε": ["non-private" if np.isnan(e) else f"{e:g}" for e in frame["epsilon"]],
        "n": frame["n"],
        "CTR (mean ± 95% CI)": [f"{c:.4f} ± {h:.4f}" for c, h in zip(frame["ctr"], frame["ci95"],
                                                                     strict=True)],
        f"% of {reference}": frame["pct_of_ref"].round(1) if "pct_of_ref" in frame else np.nan,
        "accept rate": frame["accept_rate"].round(3),
        "replay steps": frame["replay_steps"].round(0),
    })
    if "log_ctr" in summary and summary["log_ctr"].notna().any():
        table = pd.concat([pd.DataFrame([log_row(summary, table.columns)]), table],
                          ignore_index=True)
    n_trials = int(summary["seed"].nunique())
    caption = (f"{experiment}: click-through rate of counted replay rounds, mean ± 95% CI over "
               f"{n_trials} trials (T = {int(summary['T'].iloc[0])})")
    note = data_note(summary)
    if note:
        caption += f"; {note}"
    paths = write_table(table, paper_dir / "tables" / f"{experiment}_ctr", caption)
    ref = published.data if published else None
    if ref is not None:
        best = best_per_base(frame)
        claims = pd.DataFrame([evaluate_claim(c, best, curves) for c in ref["claims"]])
        caption = f"{experiment}: claims of {published.source} next to ours"
        paths += write_table(claims, paper_dir / "tables" / f"{experiment}_claims", caption)
    return paths


def ctr_panels(chosen: list[str], accounting: dict[str, str], references: int) \
        -> list[tuple[str, list[str]]]:
    """The private algorithms in panels of one accounting mode, at most six curves a panel
    counting the non-private references drawn in each."""
    return pack_panels(chosen, dict.fromkeys(chosen, 1), accounting,
                       max(1, MOST_CURVES - references))


def ctr_curve(
    experiment: str,
    exp: dict[str, Any],
    summary: pd.DataFrame,
    curves: list[dict[str, Any]],
    paper_dir: Path,
    epsilon: float = 1.0,
    algorithms: list[str] | None = None,
    skip: int = 50,
    figure: str | None = None,
    published: PublishedEntry | None = None,
) -> list[Path]:
    """Running CTR (cumulative reward / counted rounds) against the counted ("effective") step
    at one ε: panels of private algorithms of one accounting mode, the non-private ones dotted in
    each, the log's uniform choice dashed; bands: the 95 % t-interval across trials; published
    CTR ranges at ε as bars at the last step, a published crossing step as a vertical line."""
    tag = format_epsilon(epsilon)
    chosen = [c for c in sorted(curves, key=lambda c: c["algorithm"])
              if c["epsilon"] in (tag, "none")
              and (not algorithms or c["algorithm"] in algorithms)]
    colors = distinct_colors([c["algorithm"] for c in chosen], exp)
    nonprivate = [c for c in chosen if c["epsilon"] == "none"]
    private = [c for c in chosen if c["epsilon"] != "none"]
    accounting = {c["algorithm"]: str(c.get("accounting", "strict")) for c in private}
    panels = ctr_panels([c["algorithm"] for c in private], accounting, len(nonprivate))
    ncols = min(2, max(1, len(panels)))
    nrows = max(1, -(-len(panels) // ncols))
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, layout="constrained",
                             figsize=(4.6 * ncols + LEGEND_WIDTH, 3.3 * nrows + 0.5))
    claims = (comparable(published.data if published else None) or {}).get("claims", [])
    entries: dict[str, Any] = {}
    panels = panels or [("strict", [])]
    for ax, (_, names), title in zip(axes.flat, panels, panel_modes(panels), strict=False):
        last = 1.0
        for item in [*nonprivate, *(c for c in private if c["algorithm"] in names)]:
            t = item["checkpoints"].astype(float)
            keep = np.flatnonzero(t > min(skip, t[-1] - 1))
            keep = keep[drawn_points(len(keep))]
            mean = item["reward_mean"][keep] / t[keep]
            se = item["reward_se"][keep] / t[keep]
            color = colors[item["algorithm"]]
            label = f"{item['algorithm']} (non-private)" if item["epsilon"] == "none" \
                else item["algorithm"]
            (line,) = ax.plot(t[keep], mean, ":" if item["epsilon"] == "none" else "-",
                              color=color, lw=1.4, label=label)
            entries.setdefault(label, line)
            half = ci95(se, int(item["n_trials"]))
            ax.fill_between(t[keep], mean - half, mean + half, color=color, alpha=0.15, lw=0)
            last = max(last, float(t[-1]))
        for claim in claims:
            if claim.get("kind") == "range" and float(claim.get("epsilon", -1)) == epsilon:
                for name in (n for n in names if n in claim.get("algorithms", [])):
                    ax.plot([last * 1.01] * 2, [claim["low"], claim["high"]],
                            color=colors[name], label=f"published: {name}", **PUBLISHED_BAR)
                    entries.setdefault("published CTR range at ε (paper text)", Line2D(
                        [], [], color="0.5", lw=6, alpha=0.35))
            if claim.get("kind") == "crossing" and float(claim.get("epsilon", -1)) == epsilon \
                    and claim.get("algorithm") in names:
                step = _published_step(claim.get("published", ""))
                if step is not None:
                    text = f"published: {claim['algorithm']} overtakes {claim['over']}"
                    entries.setdefault(text, reference_line(ax, step, text, "0.5", "--",
                                                            vertical=True))
                    entries[text].set_gid("published")
        if "log_ctr" in summary:
            text = "uniform choice (the log's CTR)"
            entries.setdefault(text, reference_line(ax, float(summary["log_ctr"].mean()), text,
                                                    "k", "--"))
        ax.set_xlabel("counted (effective) replay step")
        ax.set_title(f"ε = {tag}, {title}", fontsize=9)
    for ax in axes.flat[len(panels):]:
        ax.set_axis_off()
    for row in axes:
        row[0].set_ylabel("running CTR")
    figure_title(fig, f"{figure or experiment}: CTR over time, ε = {tag}")
    legend = [(h, t) for t, h in entries.items()]
    legend.append((band_handle(), band_handle().get_label()))
    figure_legend(fig, legend)
    return save_figure(fig, paper_dir / "figures" / f"{experiment}_ctr")


def _published_step(text: str) -> float | None:
    """The step of a published "after ~800 effective steps" statement."""
    found = re.search(r"(\d[\d,]*)\s+effective", str(text))
    return float(found.group(1).replace(",", "")) if found else None
