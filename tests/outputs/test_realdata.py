"""Real-data outputs: CTR table with CIs and % of the reference, claims, CTR figure."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from figure_checks import curves as panel_curves
from figure_checks import (
    figure_title,
    legend_colour_mismatches,
    legend_overlaps,
    published_artists,
)
from scipy import stats

from dpbandits.config import load_config
from dpbandits.outputs import output_files, realdata
from dpbandits.outputs.realdata import (
    best_per_base,
    ctr_curve,
    ctr_frame,
    ctr_table,
    evaluate_claim,
)
from dpbandits.paper.published import load_published, published_entry

from conftest import REPO

PUBLISHED = load_published((REPO / "paper" / "published").glob("*.yaml"))

CTR = {  # (algorithm, epsilon) -> per-seed CTR
    ("LinTS", np.nan): [0.70, 0.72, 0.74],
    ("AdaPrivate-TS", 1.0): [0.63, 0.70, 0.71],
    ("AdaPrivate-UCB", 1.0): [0.66, 0.69, 0.72],
    ("AdaC-OFUL-zCDP", 1.0): [0.60, 0.60, 0.63],
}


def summary():
    rows = []
    for (alg, eps), values in CTR.items():
        for seed, v in enumerate(values):
            rows.append({"algorithm": alg, "epsilon": eps, "seed": seed, "T": 100,
                         "mean_reward": v, "accept_rate": 0.3 + 0.01 * seed,
                         "replay_steps": 100 / (0.3 + 0.01 * seed), "log_ctr": 0.5})
    return pd.DataFrame(rows)


def curves():
    t = np.arange(1, 101)
    ts = np.cumsum(np.where(t < 40, 0.60, 0.75))  # cumulative reward of rates 0.6 then 0.75
    ucb = 0.68 * t
    return [{"algorithm": a, "epsilon": "1", "checkpoints": t, "reward_mean": m,
             "reward_se": 0.01 * t, "n_trials": 3}
            for a, m in (("AdaPrivate-TS", ts), ("AdaPrivate-UCB", ucb))]


def test_ctr_frame_means_cis_and_reference_percent():
    frame = ctr_frame(summary(), "LinTS").set_index("algorithm")
    ts = np.array(CTR[("AdaPrivate-TS", 1.0)])
    half = stats.t.ppf(0.975, 2) * ts.std(ddof=1) / np.sqrt(3)
    assert frame.loc["AdaPrivate-TS", "ctr"] == pytest.approx(ts.mean())
    assert frame.loc["AdaPrivate-TS", "ci95"] == pytest.approx(half)
    assert frame.loc["AdaPrivate-TS", "pct_of_ref"] == pytest.approx(100 * 2.04 / 2.16)
    assert frame.loc["AdaPrivate-TS", "accept_rate"] == pytest.approx(0.31)


def test_claims_are_evaluated_from_our_numbers():
    best = best_per_base(ctr_frame(summary(), "LinTS"))
    rng = evaluate_claim({"text": "r", "kind": "range", "epsilon": 1, "low": 0.6, "high": 0.7,
                          "algorithms": ["AdaPrivate-TS", "AdaPrivate-UCB"]}, best, [])
    assert rng["ours"] == "0.680–0.690" and rng["holds"] is True
    gain = evaluate_claim({"text": "g", "kind": "gain", "epsilon": 1, "algorithm":
                           "AdaPrivate-TS", "over": "AdaC-OFUL-zCDP"}, best, [])
    assert gain["ours"].startswith(f"{100 * (0.68 / 0.61 - 1):+.1f}% relative, +7.0 points")
    top = evaluate_claim({"text": "b", "kind": "best", "algorithm": "AdaPrivate-TS",
                          "epsilons": [1], "among": ["AdaPrivate-TS", "AdaPrivate-UCB",
                                                     "AdaC-OFUL-zCDP"]}, best, [])
    assert top["ours"] == "ε=1: AdaPrivate-UCB" and top["holds"] is False
    cross = evaluate_claim({"text": "c", "kind": "crossing", "epsilon": 1, "algorithm":
                            "AdaPrivate-TS", "over": "AdaPrivate-UCB"}, best, curves())
    assert cross["ours"] == "from counted round 84"  # 0.6·39 + 0.75·(t−39) ≥ 0.68·t ⇔ t ≥ 83.6
    missing = evaluate_claim({"text": "m", "kind": "gain", "epsilon": 10, "algorithm":
                              "AdaPrivate-TS", "over": "AdaC-OFUL-zCDP"}, best, [])
    assert missing["ours"] == "not run"


def test_table_and_figure_files(tmp_path):
    opts = {"reference": "LinTS", "published": "realdata:ts_movielens"}
    entry = published_entry(PUBLISHED, opts["published"])
    written = ctr_table("ts_movielens", {}, summary(), curves(), tmp_path,
                        **{**opts, "published": entry})
    assert sorted(str(p.relative_to(tmp_path)) for p in written) == \
        sorted(output_files("ts_movielens", {"kind": "ctr_table", **opts}))
    md = (tmp_path / "tables" / "ts_movielens_claims.md").read_text()
    assert "71.7-72.6%" in md and "not run" in md
    figs = ctr_curve("ts_movielens", {}, summary(), curves(), tmp_path, epsilon=1.0)
    assert all(p.stat().st_size > 0 for p in figs)


def test_ctr_table_caption_names_the_archive_and_feature_mode(tmp_path):
    data = summary().assign(data_archives="ml-latest-small.zip", data_sha256="ab" * 32,
                            data_pinned=False, features_fit="whole", features_leak_free=False,
                            feature_auc=0.93, feature_coverage=0.9215, K=3)
    ctr_table("ts_movielens_small", {}, data, curves(), tmp_path, reference="LinTS")
    md = (tmp_path / "tables" / "ts_movielens_small_ctr.md").read_text()
    assert "ml-latest-small.zip (sha256 abababababab…), NOT the pinned release" in md
    assert "SVD fit on the whole log (the replayed ratings included)" in md
    assert "feature-score AUC on the replayed events 0.930, coverage 92.2 %" in md
    assert "the log's CTR (uniform choice) 0.5000" in md
    rows = [line for line in md.splitlines() if line.startswith("|")]
    assert rows[2].split("|")[1].strip() == "the log (uniform choice)"  # above the algorithms
    assert "0.5000" in rows[2] and "0.333" in rows[2]
    ctr_table("ts_x", {}, summary(), curves(), tmp_path, reference="LinTS")
    assert "sha256" not in (tmp_path / "tables" / "ts_x_ctr.md").read_text()


def test_ctr_figure_of_twelve_algorithms_in_panels_of_one_accounting_mode(tmp_path,
                                                                          monkeypatch):
    """The paper-scale line-up at ε = 1: at most six curves a panel, the two non-private
    references counted in each; the published CTR range (bars) and crossing step (a line)."""
    exp = load_config(REPO / "config" / "config.yaml")["experiments"]["ts_movielens"]
    t = np.arange(1, 1001)
    items = [{"algorithm": e["label"], "epsilon": "none" if e["policy"] in ("LinUCB", "LinTS")
              else "1", "accounting": e.get("accounting", "strict"), "checkpoints": t,
              "reward_mean": (0.6 + 0.01 * k) * t, "reward_se": 0.01 * t, "n_trials": 5}
             for k, e in enumerate(exp["algorithms"])]
    kept = {}
    monkeypatch.setattr(realdata, "save_figure", lambda fig, stem: kept.setdefault("fig", fig))
    ctr_curve("ts_movielens", exp, summary(), items, tmp_path, epsilon=1.0,
              figure="AdaPrivate-TS Sec. 5, MovieLens-25M",
              published=published_entry(PUBLISHED, "realdata:ts_movielens"))
    fig = kept["fig"]
    panels = [ax for ax in fig.get_axes() if ax.axison]
    assert all(len(panel_curves(ax)) <= 6 for ax in panels)
    private = {line.get_label() for ax in panels for line in panel_curves(ax)
               if "non-private" not in line.get_label()}
    assert len(private) == 10  # every private algorithm drawn once
    assert [ax.get_title() for ax in panels] == [
        "ε = 1, strict accounting (1 of 3)", "ε = 1, strict accounting (2 of 3)",
        "ε = 1, strict accounting (3 of 3)", "ε = 1, paper accounting"]
    assert figure_title(fig).startswith("AdaPrivate-TS Sec. 5, MovieLens-25M: CTR over time")
    assert legend_overlaps(fig) == [] and legend_colour_mismatches(fig) == []
    lines = [tuple(a.get_ydata()) for a in published_artists(fig)]
    assert lines.count((0.717, 0.726)) == 8  # the eight event-level methods the claim names
    crossing = [a for a in published_artists(fig) if tuple(a.get_ydata()) == (0, 1)]
    assert [set(a.get_xdata()) for a in crossing] == [{800.0}]  # AdaPrivate-TS's panel only
    plt.close(fig)
