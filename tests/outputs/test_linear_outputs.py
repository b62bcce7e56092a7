"""regret_vs_epsilon and linear_claims outputs on a small synthetic summary."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpbandits.errors import ConfigError
from dpbandits.outputs import get_output, make_outputs
from dpbandits.outputs.linear import evaluate_claim, final_regret_stats
from dpbandits.paper.published import load_published

from conftest import REPO

PUBLISHED = load_published((REPO / "paper" / "published").glob("*.yaml"))

POLICIES = {
    "NP": ("PhasedElimination", None),
    "C": ("CentralDPElimination", 1.0),
    "S": ("ShuffleDPElimination", 1.0),
    "L": ("LocalDPElimination", 1.0),
}


def summary(scale: dict[str, dict[float, float]], seeds: int = 6) -> pd.DataFrame:
    """Regret = base_seed × scale[alg][ε]; the non-private base differs per seed."""
    rng = np.random.default_rng(0)
    base = rng.uniform(500, 1500, seeds)
    rows = []
    for seed in range(seeds):
        rows.append(
            {
                "algorithm": "NP",
                "policy": "PhasedElimination",
                "epsilon": np.nan,
                "seed": seed,
                "regret": base[seed],
                "T": 1000,
            }
        )
        rows.append(
            {
                "algorithm": "LS",
                "policy": "LSPhasedElimination",
                "epsilon": np.nan,
                "seed": seed,
                "regret": 0.98 * base[seed],
                "T": 1000,
            }
        )
        for alg, by_eps in scale.items():
            for eps, factor in by_eps.items():
                rows.append(
                    {
                        "algorithm": alg,
                        "policy": POLICIES[alg][0],
                        "epsilon": eps,
                        "seed": seed,
                        "regret": base[seed] * factor,
                        "T": 1000,
                    }
                )
    return pd.DataFrame(rows)


SCALE = {
    "C": {0.1: 3.0, 1.0: 1.2, 100.0: 1.0},
    "S": {0.1: 5.0, 1.0: 1.6, 100.0: 1.05},
    "L": {0.1: 20.0, 1.0: 4.0, 100.0: 1.1},
}


def test_paired_ratio_is_exact_for_proportional_regret() -> None:
    stats = final_regret_stats(summary(SCALE))
    row = stats[(stats["role"] == "local") & (stats["epsilon"] == 0.1)].iloc[0]
    assert row["ratio_to_nonprivate"] == pytest.approx(20.0)
    assert row["ratio_se"] == pytest.approx(0.0, abs=1e-12)
    base = stats[stats["role"] == "nonprivate"].iloc[0]
    assert base["n"] == 6 and math.isnan(base["epsilon"])
    assert base["regret_se"] > 0


def test_ratio_to_another_baseline() -> None:
    stats = final_regret_stats(summary(SCALE), "nonprivate_ls")
    row = stats[(stats["role"] == "central") & (stats["epsilon"] == 1.0)].iloc[0]
    assert row["ratio_to_nonprivate"] == pytest.approx(1.2 / 0.98)
    lacking = summary(SCALE).query("policy != 'LSPhasedElimination'")
    check = {
        "kind": "ratio_max",
        "roles": ["central"],
        "epsilon": 1,
        "max": 2,
        "baseline": "nonprivate_ls",
    }
    assert evaluate_claim(final_regret_stats(lacking, "nonprivate_ls"), check)[1] == "not measured"


def test_claim_checks() -> None:
    stats = final_regret_stats(summary(SCALE))
    claims = PUBLISHED["linear:fig2"]
    verdicts = {
        c["id"]: evaluate_claim(
            final_regret_stats(summary(SCALE), c["check"].get("baseline", "nonprivate")),
            c["check"],
        )[1]
        for c in claims["claims"]
    }
    assert set(verdicts.values()) == {"supported"}
    worse = final_regret_stats(summary({**SCALE, "C": {0.1: 3.0, 1.0: 1.55, 100.0: 1.3}}))
    check = {"kind": "ratio_max", "roles": ["central"], "epsilon": 1, "max": 1.5}
    assert evaluate_claim(worse, check)[1] == "not supported"
    order = {
        "kind": "ordering",
        "roles": ["nonprivate", "central", "shuffled", "local"],
        "epsilons": [0.1, 1],
    }
    assert evaluate_claim(worse, order)[1] == "supported"
    swapped = final_regret_stats(summary({**SCALE, "S": {0.1: 2.0, 1.0: 1.6, 100.0: 1.05}}))
    assert evaluate_claim(swapped, order)[1] == "not supported"
    missing = {"kind": "ratio_min", "roles": ["local"], "epsilon": 0.5, "min": 10}
    assert evaluate_claim(stats, missing)[1] == "not measured"


def test_outputs_write_their_declared_files(tmp_path) -> None:
    data = summary(SCALE)
    specs = [{"kind": "regret_vs_epsilon"}, {"kind": "linear_claims", "published": "linear:fig2"}]
    written = make_outputs("lin", {"outputs": specs}, data, [], tmp_path, PUBLISHED)
    expected = {str(tmp_path / f) for spec in specs
                for f in get_output(spec["kind"]).files("lin", spec)}
    assert {str(p) for p in written} == expected
    assert all(Path(p).stat().st_size > 0 for p in expected)
    claims = pd.read_csv(tmp_path / "tables" / "lin_claims.csv")
    assert (claims["verdict"].str.startswith("supported")).all()
    runs = pd.read_csv(tmp_path / "tables" / "lin_runs.csv")
    assert len(runs) == len(data)


def test_claims_need_a_published_entry(tmp_path) -> None:
    specs = [{"kind": "linear_claims", "published": "linear:nope"}]
    with pytest.raises(ConfigError, match="'linear:nope' is not an entry"):
        make_outputs("lin", {"outputs": specs}, summary(SCALE), [], tmp_path, PUBLISHED)
    with pytest.raises(ConfigError, match="lacks `published`"):
        get_output("linear_claims").make("lin", {}, summary(SCALE), [], tmp_path)


def test_ratio_verdict_uses_one_sided_bounds() -> None:
    """1.645 s.e. either side of the limit decides; in between is inconclusive."""

    def stats_with(ratio: float, se: float) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "role": "nonprivate",
                    "epsilon": np.nan,
                    "ratio_to_nonprivate": 1.0,
                    "ratio_se": 0.0,
                    "regret_mean": 1.0,
                },
                {
                    "role": "central",
                    "epsilon": 1.0,
                    "ratio_to_nonprivate": ratio,
                    "ratio_se": se,
                    "regret_mean": ratio,
                },
            ]
        )

    at_most = {"kind": "ratio_max", "roles": ["central"], "epsilon": 1, "max": 1.5}
    at_least = {"kind": "ratio_min", "roles": ["central"], "epsilon": 1, "min": 1.5}
    assert evaluate_claim(stats_with(1.3, 0.1), at_most)[1] == "supported"
    assert evaluate_claim(stats_with(1.4, 0.1), at_most)[1] == "inconclusive"
    assert evaluate_claim(stats_with(1.7, 0.1), at_most)[1] == "not supported"
    assert evaluate_claim(stats_with(1.7, 0.1), at_least)[1] == "supported"
    assert evaluate_claim(stats_with(1.6, 0.1), at_least)[1] == "inconclusive"
    assert evaluate_claim(stats_with(1.3, 0.1), at_least)[1] == "not supported"
