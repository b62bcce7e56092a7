"""Tables and figures of the AdaPrivate-TS synthetic experiments (paper Sec. 5: Table 1,
amplification, ablation, robustness, group privacy).

Every number is NP% = 100·R_alg/R_ref with R the cumulative expected reward Σ_t μ_{t,a_t} and
R_ref that of the non-private reference (LinTS, v = 1) on the same trial, plus
NP%_norm = 100·(R_alg − R_rand)/(R_ref − R_rand) (docs/ts.md, "Metrics"). Means carry 95%
t-intervals over seeds; tests are paired two-sided t-tests across seeds (common random numbers).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from dpbandits import stats
from dpbandits.config import expand_algorithms, instance_grid
from dpbandits.errors import ConfigError
from dpbandits.outputs.ts_figures import (
    ablation_figure,
    accounting_of,
    amplification_figure,
    grid_panel,
    legend_entries,
    np_figure,
    np_label,
    robustness_published,
    uniform_np,
)
from dpbandits.paper.published import PublishedEntry
from dpbandits.paper.tables import write_table
from dpbandits.plots import (
    LEGEND_WIDTH,
    comparable,
    figure_legend,
    figure_title,
    reference_line,
    save_figure,
    trials_text,
    uniform_line,
)
from dpbandits.scale import current_mark

REFERENCE = "LinTS"


# --------------------------------------------------------------------------- per-trial metrics


def _environment_references(exp: dict[str, Any], rows: pd.DataFrame) -> pd.DataFrame:
    """Σ best and Σ uniform per (instance_index, seed), rebuilt from the instance generator."""
    from dpbandits.instances.registry import build_instance

    instances = instance_grid(exp)
    out = []
    for (index, seed), _ in rows.groupby(["instance_index", "seed"]):
        env = build_instance(dict(instances[int(index)])).environment(int(seed))
        out.append({"instance_index": index, "seed": seed, "sum_best": env.sum_best,
                    "random_reward": env.sum_uniform})
    return pd.DataFrame(out)


def trial_metrics(exp: dict[str, Any], summary: pd.DataFrame,
                  reference: str = REFERENCE) -> pd.DataFrame:
    """One row per (algorithm, ε, instance, seed) with expected reward, NP% and NP%_norm."""
    df = summary.copy()
    if "grid_of" not in df.columns:
        df["grid_of"] = df["algorithm"]
    df["grid_of"] = df["grid_of"].fillna(df["algorithm"])
    if "expected_reward" not in df.columns or "random_reward" not in df.columns \
            or df["expected_reward"].isna().any():
        refs = _environment_references(exp, df)
        df = df.drop(columns=[c for c in ("random_reward",) if c in df.columns])
        df = df.merge(refs, on=["instance_index", "seed"], how="left")
        df["expected_reward"] = df["sum_best"] - df["regret"]
    ref = df[df["algorithm"] == reference]
    if ref.empty:
        raise ConfigError(f"reference algorithm {reference!r} has no results in this experiment; "
                          f"allowed: one of its algorithm labels")
    ref = ref.groupby(["instance_index", "seed"])["expected_reward"].mean().rename("ref_reward")
    df = df.join(ref, on=["instance_index", "seed"])
    df["np"] = 100.0 * df["expected_reward"] / df["ref_reward"]
    df["np_norm"] = (100.0 * (df["expected_reward"] - df["random_reward"])
                     / (df["ref_reward"] - df["random_reward"]))
    return df


def mean_ci(values: np.ndarray) -> tuple[float, float, float]:
    """(mean, 95% t half-width, sd) over seeds."""
    values = np.asarray(values, dtype=float)
    if len(values) == 0:
        return math.nan, math.nan, math.nan
    return float(values.mean()), stats.t_half_width(values), stats.sample_sd(values)


def fmt(mean: float, half: float, digits: int = 1) -> str:
    if not np.isfinite(mean):
        return "—"
    if not np.isfinite(half):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {half:.{digits}f}"


def paired(a: pd.DataFrame, b: pd.DataFrame, column: str = "np") -> tuple[float, float, int]:
    """Mean difference a − b over shared (instance, seed) and the paired t-test p-value."""
    keys = ["instance_index", "seed"]
    joined = a[[*keys, column]].merge(b[[*keys, column]], on=keys, suffixes=("_a", "_b"))
    diff = (joined[f"{column}_a"] - joined[f"{column}_b"]).to_numpy(float)
    if len(diff) < 2 or np.allclose(diff, diff[0]):
        return float(diff.mean()) if len(diff) else math.nan, math.nan, len(diff)
    _, p = stats.paired_t_test(joined[f"{column}_a"], joined[f"{column}_b"])
    return float(diff.mean()), p, len(diff)


def _eps_key(value: float) -> str:
    return "non-private" if not np.isfinite(value) else f"{value:g}"


def _eps_sort(values) -> list[float]:
    finite = sorted(v for v in set(values) if np.isfinite(v))
    return ([math.nan] if any(not np.isfinite(v) for v in values) else []) + finite


# --------------------------------------------------------------------------- grid cells


def _setting(label: str, base: str) -> str:
    rest = label[len(base):].strip() if label.startswith(base) else label
    return rest.strip("[]") or "default"


def default_labels(exp: dict[str, Any]) -> dict[str, str]:
    """base label → the grid cell whose parameters equal the policy's defaults (paper defaults)."""
    from dpbandits.policies import get_policy_class

    out: dict[str, str] = {}
    for entry in expand_algorithms(exp["algorithms"]):
        defaults = get_policy_class(entry["policy"]).defaults
        if entry["grid_of"] in out:
            continue
        if all(k in defaults and _same(v, defaults[k]) for k, v in entry["grid_params"].items()):
            out[entry["grid_of"]] = entry["label"]
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(float(a), float(b))
    return a == b


def grid_cells(exp: dict[str, Any], metrics: pd.DataFrame) -> pd.DataFrame:
    """Every (base, ε, label) cell: NP% mean/CI, NP%_norm, and which cell is default / tuned."""
    order = {e["label"]: i for i, e in enumerate(expand_algorithms(exp["algorithms"]))}
    defaults = default_labels(exp)
    rows = []
    for (base, eps, label), df in metrics.groupby(["grid_of", "epsilon", "algorithm"],
                                                  dropna=False):
        np_mean, np_half, np_sd = mean_ci(df["np"])
        norm_mean, norm_half, _ = mean_ci(df["np_norm"])
        rows.append({"method": base, "epsilon": eps, "label": label,
                     "setting": _setting(label, base), "n": len(df),
                     "reward": df["expected_reward"].mean(), "np": np_mean, "np_ci": np_half,
                     "np_sd": np_sd, "np_norm": norm_mean, "np_norm_ci": norm_half,
                     "order": order.get(label, len(order)),
                     "default": defaults.get(base) == label})
    cells = pd.DataFrame(rows)
    cells["tuned"] = False
    for _, group in cells.groupby(["method", "epsilon"], dropna=False):
        best = group.sort_values(["reward", "order"], ascending=[False, True],
                                 kind="stable").index[0]
        cells.loc[best, "tuned"] = True
    return cells


# --------------------------------------------------------------------------- Table 1


def ts_table1(experiment: str, exp: dict[str, Any], summary: pd.DataFrame, curves: Any,
              paper_dir: Path, reference: str = REFERENCE, published: PublishedEntry | None = None,
              comparisons: list[dict[str, Any]] | None = None,
              figure: str | None = None) -> list[Path]:
    """Table 1: NP% (default and tuned cell) per method and ε, with paired TS-vs-UCB tests."""
    metrics = trial_metrics(exp, summary, reference)
    cells = grid_cells(exp, metrics)
    methods = list(dict.fromkeys(e["grid_of"] for e in expand_algorithms(exp["algorithms"])))
    epsilons = _eps_sort(cells["epsilon"].to_numpy(float))
    table = []
    for method in methods:
        row: dict[str, Any] = {"method": method}
        for eps in epsilons:
            sel = cells[(cells["method"] == method)
                        & ((cells["epsilon"] == eps) if np.isfinite(eps)
                           else cells["epsilon"].isna())]
            key = f"ε={_eps_key(eps)}"
            if sel.empty:
                row[key] = ""
                continue
            default = sel[sel["default"]]
            tuned = sel[sel["tuned"]].iloc[0]
            text = fmt(default["np"].iloc[0], default["np_ci"].iloc[0]) if len(default) else "—"
            if len(sel) > 1:
                text += f" / {fmt(tuned['np'], tuned['np_ci'])} [{tuned['setting']}]"
            row[key] = text
        table.append(row)
    ref = published.data if published else None
    n_seeds = int(metrics["seed"].nunique())
    caption = (f"{experiment}: NP% = 100·R/R(reference {reference}) (mean ± 95% CI over "
               f"{n_seeds} seeds); each cell 'default / best grid cell [winning setting]'; "
               "the best cell is selected on the evaluation seeds (optimistic)")
    if ref:
        caption += f". Published: {ref.get('summary', '')}"
    paths = write_table(pd.DataFrame(table), paper_dir / "tables" / f"{experiment}_table1",
                        caption)
    tests = _comparison_table(metrics, cells, comparisons or [], epsilons, ref)
    paths += write_table(tests, paper_dir / "tables" / f"{experiment}_tests",
                         f"{experiment}: paired two-sided t-tests over seeds (NP% points)")
    out = cells.drop(columns=["order"]).sort_values(["method", "epsilon", "label"])
    stem = paper_dir / "tables" / f"{experiment}_cells"
    paths += write_table(out.round(4), stem, f"{experiment}: every grid cell")
    return paths + np_figure(experiment, cells, methods, metrics, paper_dir, reference, exp,
                             figure, comparable(ref))


def _base(method: str) -> str:
    return method.split(" (")[0]


def _cell_rows(metrics: pd.DataFrame, cells: pd.DataFrame, method: str, eps: float,
               which: str) -> pd.DataFrame:
    sel = cells[(cells["method"] == method) & (cells["epsilon"] == eps) & cells[which]]
    if sel.empty:
        return metrics.iloc[0:0]
    label = sel["label"].iloc[0]
    return metrics[(metrics["algorithm"] == label) & (metrics["epsilon"] == eps)]


def _comparison_table(metrics: pd.DataFrame, cells: pd.DataFrame,
                      comparisons: list[dict[str, Any]], epsilons: list[float],
                      ref: dict[str, Any] | None) -> pd.DataFrame:
    published = (ref or {}).get("p_values", {})
    rows = []
    for comp in comparisons:
        a, b = comp["a"], comp["b"]
        a_cell, b_cell = comp.get("a_cell", "default"), comp.get("b_cell", "default")
        for eps in epsilons:
            if not np.isfinite(eps):
                continue
            rows_a = _cell_rows(metrics, cells, a, eps, a_cell)
            rows_b = _cell_rows(metrics, cells, b, eps, b_cell)
            if rows_a.empty or rows_b.empty:
                continue
            diff, p, n = paired(rows_a, rows_b)
            diff_norm, p_norm, _ = paired(rows_a, rows_b, "np_norm")
            key = f"{a} ({a_cell}) − {b} ({b_cell})"
            pub = published.get(key, {}) if isinstance(published, dict) else {}
            rows.append({"comparison": key, "ε": f"{eps:g}", "n": n,
                         "Δ NP% (pp)": round(diff, 2), "p": _p(p),
                         "Δ NP%_norm (pp)": round(diff_norm, 2), "p (norm)": _p(p_norm),
                         "published Δ": pub.get(eps, pub.get(str(eps), {})).get("diff", "")
                         if isinstance(pub, dict) else "",
                         "published p": pub.get(eps, pub.get(str(eps), {})).get("p", "")
                         if isinstance(pub, dict) else ""})
    return pd.DataFrame(rows, columns=["comparison", "ε", "n", "Δ NP% (pp)", "p",
                                       "Δ NP%_norm (pp)", "p (norm)", "published Δ",
                                       "published p"])


def _p(p: float) -> str:
    if not np.isfinite(p):
        return "—"
    return f"{p:.2g}" if p >= 1e-4 else "<1e-4"


# --------------------------------------------------------------------------- amplification


def ts_amplification(experiment: str, exp: dict[str, Any], summary: pd.DataFrame, curves: Any,
                     paper_dir: Path, base: str = "AdaPrivate-TS",
                     amplified: str = "AdaPrivate-TS-Amp", reference: str = REFERENCE,
                     published: PublishedEntry | None = None,
                     figure: str | None = None) -> list[Path]:
    """NP% of the Amp variant against q per ε, next to the non-amplified base (paper Sec. 5)."""
    metrics = trial_metrics(exp, summary, reference)
    amp = metrics[metrics["policy"] == metrics.loc[metrics["grid_of"] == amplified,
                                                   "policy"].iloc[0]]
    rows = []
    for (_, eps), df in amp.groupby(["algorithm", "epsilon"]):
        base_rows = metrics[(metrics["algorithm"] == base) & (metrics["epsilon"] == eps)]
        np_mean, np_half, np_sd = mean_ci(df["np"])
        base_mean, base_half, base_sd = mean_ci(base_rows["np"])
        diff, p, _ = paired(df, base_rows)
        rows.append({
            "variant": df["grid_of"].iloc[0], "_grid": df["grid_of"].iloc[0] == amplified,
            "ε": eps, "q": float(df["q"].iloc[0]) if "q" in df else math.nan,
            "σ_amp": df["sigma"].iloc[0] if "sigma" in df else math.nan,
            "α*": int(df["alpha_star"].iloc[0]) if "alpha_star" in df else "",
            "σ_amp/q": df["sigma_effective"].iloc[0] if "sigma_effective" in df else math.nan,
            "σ_base": base_rows["sigma"].iloc[0] if "sigma" in base_rows and len(base_rows)
            else math.nan,
            "NP% Amp": fmt(np_mean, np_half), "sd Amp": round(np_sd, 2),
            "NP% base": fmt(base_mean, base_half), "sd base": round(base_sd, 2),
            "Δ (pp)": round(diff, 2), "p": _p(p), "_mean": np_mean, "_base": base_mean,
            "_half": np_half, "_base_half": base_half, "_label": df["algorithm"].iloc[0],
            "_n": len(df), "accounting": df["accounting"].iloc[0],
        })
    table = pd.DataFrame(rows).sort_values(["variant", "ε", "q"])
    ref = published.data if published else None
    fig = amplification_figure(experiment, table, metrics, exp, base, amplified, reference,
                               figure, comparable(ref))
    paths = save_figure(fig, paper_dir / "figures" / f"{experiment}_amplification")
    caption = (f"{experiment}: AdaPrivate-TS-Amp vs q (σ_amp from RDP orders ≤ 64, then ÷q) "
               "against the non-amplified base; paired t-tests over seeds")
    if ref:
        caption += f". Published: {ref.get('summary', '')}"
    out = table[[c for c in table.columns if not c.startswith("_")]].round(4)
    return paths + write_table(out, paper_dir / "tables" / f"{experiment}_amplification",
                               caption)


# --------------------------------------------------------------------------- ablation


def ts_ablation(experiment: str, exp: dict[str, Any], summary: pd.DataFrame, curves: Any,
                paper_dir: Path, rows: list[str] | None = None, reference: str = REFERENCE,
                published: PublishedEntry | None = None, figure: str | None = None) -> list[Path]:
    """Each row adds one component; increments with paired t-tests (paper Sec. 5, ablation)."""
    metrics = trial_metrics(exp, summary, reference)
    labels = rows or [e["label"] for e in expand_algorithms(exp["algorithms"])
                      if e["label"] != reference]
    out, prev, first = [], None, None
    for label in labels:
        df = metrics[metrics["algorithm"] == label]
        if df.empty:
            raise ConfigError(f"ablation row {label!r} has no results; allowed: algorithm labels")
        mean, half, _ = mean_ci(df["np"])
        row = {"configuration": label, "NP%": fmt(mean, half), "_mean": mean, "_half": half,
               "_n": len(df)}
        if prev is not None:
            diff, p, _ = paired(df, prev)
            row.update({"Δ vs previous (pp)": round(diff, 2), "p": _p(p)})
            total, p_total, _ = paired(df, first)
            row.update({"Δ vs first (pp)": round(total, 2), "p (total)": _p(p_total)})
        else:
            first = df
        prev = df
        out.append(row)
    table = pd.DataFrame(out)
    ref = published.data if published else None
    fig, ax = plt.subplots(figsize=(5.2 + LEGEND_WIDTH, 0.6 * len(table) + 1.9),
                           layout="constrained")
    artists = ablation_figure(ax, table, metrics, exp, reference, comparable(ref))
    ax.set_xlabel(np_label(reference).replace("\n", " "))
    figure_title(fig, f"{figure or experiment}: NP% as each row adds one component")
    figure_legend(fig, legend_entries(artists, trials_text(table["_n"])))
    paths = save_figure(fig, paper_dir / "figures" / f"{experiment}_ablation")
    caption = f"{experiment}: each row adds one component (paired t-tests over seeds)"
    if ref:
        caption += f". Published: {ref.get('summary', '')}"
    out = table[[c for c in table.columns if not c.startswith("_")]]
    return paths + write_table(out, paper_dir / "tables" / f"{experiment}_ablation", caption)


# --------------------------------------------------------------------------- robustness


def ts_robustness(experiment: str, exp: dict[str, Any], summary: pd.DataFrame, curves: Any,
                  paper_dir: Path, reference: str = REFERENCE,
                  published: PublishedEntry | None = None,
                  figure: str | None = None) -> list[Path]:
    """NP% (mean ± sd, as the paper reports) over each hyper-parameter grid (paper Sec. 5)."""
    metrics = trial_metrics(exp, summary, reference)
    entries = [e for e in expand_algorithms(exp["algorithms"]) if e["grid_params"]]
    groups = list(dict.fromkeys(e["grid_of"] for e in entries))
    rows = []
    for group in groups:
        cells = [e for e in entries if e["grid_of"] == group]
        means = []
        for e in cells:
            df = metrics[metrics["algorithm"] == e["label"]]
            mean, half, sd = mean_ci(df["np"])
            means.append(mean)
            rows.append({"grid": group, "setting": _setting(e["label"], group),
                         "NP% (mean ± sd)": fmt(mean, sd), "95% CI": round(half, 2),
                         "_mean": mean, "_half": half, "_n": len(df),
                         "_params": dict(e["grid_params"])})
        for row in rows[-len(cells):]:
            row.update({"grid min": round(min(means), 2), "grid spread (max − min)":
                        round(max(means) - min(means), 2)})
    table = pd.DataFrame(rows)
    ref = published.data if published else None
    modes = accounting_of(metrics)
    floor = uniform_np(metrics)
    fig, axes = plt.subplots(1, len(groups), figsize=(3.9 * len(groups) + LEGEND_WIDTH, 3.6),
                             squeeze=False, layout="constrained")
    artists: list[Any] = []
    for ax, group in zip(axes[0], groups, strict=True):
        sub = table[table["grid"] == group]
        artists += grid_panel(ax, sub, group, exp)
        ax.set_title(f"{ax.get_title()}\n{modes.get(group, 'strict')} accounting", fontsize=8)
        artists.append(reference_line(ax, 100.0, f"{reference} (reference) = 100"))
        artists += [line for line in [uniform_line(ax, floor)] if line is not None]
        artists += robustness_published(ax, sub, comparable(ref))
    axes[0][0].set_ylabel(np_label(reference))
    figure_title(fig, f"{figure or experiment}: NP% over each grid, ε = "
                      f"{_eps_key(float(metrics['epsilon'].dropna().iloc[0]))}")
    figure_legend(fig, legend_entries(artists, trials_text(table["_n"])))
    paths = save_figure(fig, paper_dir / "figures" / f"{experiment}_robustness")
    caption = f"{experiment}: NP% over each grid (mean ± sd over seeds, 95% CI half-width)"
    if ref:
        caption += f". Published: {ref.get('summary', '')}"
    out = table[[c for c in table.columns if not c.startswith("_")]]
    return paths + write_table(out, paper_dir / "tables" / f"{experiment}_robustness", caption)


# --------------------------------------------------------------------------- group privacy


def ts_group_privacy(experiment: str, exp: dict[str, Any], summary: pd.DataFrame, curves: Any,
                     paper_dir: Path, method: str = "AdaPrivate-TS", reference: str = REFERENCE,
                     published: PublishedEntry | None = None) -> list[Path]:
    """ρ per event = ρ(ε_user)/k², σ, NP% and NP%_norm per group size k (docs/ts.md, "Group
    privacy")."""
    metrics = trial_metrics(exp, summary, reference)
    ref = published.data if published else {}
    pub_rows = {int(k): v for k, v in (ref.get("rows") or {}).items()}
    rows = []
    apart = current_mark()  # another scale: published values shown, no differences
    for _, df in metrics[metrics["grid_of"] == method].groupby("algorithm", sort=False):
        k = int(df["group_size"].iloc[0]) if "group_size" in df else 1
        np_mean, np_half, _ = mean_ci(df["np"])
        norm_mean, norm_half, _ = mean_ci(df["np_norm"])
        pub = pub_rows.get(k, {})
        rows.append({"k": k, "ε_user": df["epsilon"].iloc[0],
                     "ρ per event": round(float(df["rho"].iloc[0]), 5),
                     "σ": round(float(df["sigma"].iloc[0]), 4),
                     "NP%": fmt(np_mean, np_half), "NP%_norm": fmt(norm_mean, norm_half),
                     "published ρ": pub.get("rho", ""), "published NP%": pub.get("np", ""),
                     "|NP% − pub|": _gap(np_mean, pub.get("np"), apart),
                     "|NP%_norm − pub|": _gap(norm_mean, pub.get("np"), apart)})
    table = pd.DataFrame(rows).sort_values("k")
    caption = (f"{experiment}: group privacy (k events of one user, k²ρ per user): per-event ρ, "
               "NP% and NP%_norm (mean ± 95% CI); published values from the paper's text")
    return write_table(table, paper_dir / "tables" / f"{experiment}_group_privacy", caption)


def _gap(ours: float, published: float | None, apart: str | None) -> Any:
    """|ours − published| to 0.1, "" without a published value, "not comparable" at another
    scale."""
    if published is None:
        return ""
    return "not comparable" if apart else round(abs(ours - published), 1)
