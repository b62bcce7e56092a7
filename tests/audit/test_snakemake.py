"""The real `snakemake audit` target: exit 0 with every control caught, ≠ 0 with one missed."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
import yaml

from dpbandits.audit.mutations import WEAKENINGS, catalogue

from conftest import REPO, SMOKE_PAPER, SMOKE_RESULTS, run_snakemake


def _audit(workdir: Path, audit: dict, *options: str) -> tuple[int, str]:
    """`snakemake audit` with a config overlay on the smoke config setting `audit:`."""
    path = workdir / "audit.yaml"
    path.write_text(yaml.safe_dump({"base": str(REPO / "config" / "smoke.yaml"),
                                    "audit": audit}))
    proc = run_snakemake(workdir, "--cores", "2", "audit", "--configfile", str(path), *options)
    return proc.returncode, proc.stdout + proc.stderr


def test_audit_target_passes_with_its_controls_caught(tmp_path: Path) -> None:
    code, log = _audit(tmp_path, {"select": ["gaussian"]})
    assert code == 0, log[-3000:]
    table = pd.read_csv(tmp_path / SMOKE_PAPER / "tables" / "privacy_audit.csv")
    assert sorted(table["verdict"]) == ["control caught", "ok"]
    assert "| gaussian [control noise ×0.5] |" in (
        tmp_path / SMOKE_PAPER / "tables" / "privacy_audit.md").read_text()
    assert "control caught: 1" in (tmp_path / SMOKE_RESULTS / "audit" / "verdict.txt").read_text()
    checks = (tmp_path / SMOKE_RESULTS / "audit" / "release_checks.txt").read_text()
    assert "0 violation(s)" in checks
    md = (tmp_path / SMOKE_PAPER / "tables" / "privacy_audit.md").read_text()
    total = len(catalogue())  # every checked policy's weakenings
    assert f"Mutation score of the release checks: {total} / {total} weakenings caught" in md
    cells = ["caught"] * 5 + ["n/a"] * (len(WEAKENINGS) - 5)
    assert f"| AdaPrivate-TS-Amp | {' | '.join(cells)} | 5 / 5 |" in md
    assert f"| zCDP-Episodic | {' | '.join(cells)} | 5 / 5 |" in md


@pytest.mark.parametrize("weaken, release", [
    ("AdaPrivate-TS: noise × 0.1", "b batch increment"),
    ("AdaPrivate-TS-Amp: reward clip removed", "b batch increment"),
    ("AdaPrivate-UCB: sensitivity ÷ 10", "b batch increment"),
    ("Private-GLM: tree-node noise × 0.1", "V-tree node"),
])
def test_audit_target_fails_naming_the_release_when_a_policy_is_weakened(
        tmp_path: Path, weaken: str, release: str) -> None:
    code, log = _audit(tmp_path, {"select": ["gaussian"], "weaken": weaken})
    assert code != 0
    policy = weaken.split(":")[0]
    assert "RELEASE CHECKS FAILED" in log and f"{policy} [strict]" in log, log[-3000:]
    assert f"release '{release}" in log
    assert not (tmp_path / SMOKE_RESULTS / "audit" / "release_checks.txt").exists()


def test_audit_target_fails_when_a_control_gets_its_honest_noise_back(tmp_path: Path) -> None:
    code, log = _audit(tmp_path, {"select": ["gaussian"], "control_noise_scale": 1.0})
    assert code != 0
    assert "AUDIT FAILED: control MISSED: gaussian [control]" in log
    table = pd.read_csv(tmp_path / SMOKE_PAPER / "tables" / "privacy_audit.csv")
    assert "control MISSED" in set(table["verdict"])
    assert not (tmp_path / SMOKE_RESULTS / "audit" / "verdict.txt").exists()


@pytest.mark.parametrize(("audit", "needle"), [
    ({"select": ["nope"]}, "unknown audit(s) nope"),
    ({"weaken": "AdaPrivate-TS: noise × 2"}, "mutation 'AdaPrivate-TS: noise × 2' is not allowed"),
])
def test_bad_overlay_is_one_error_line(tmp_path: Path, audit: dict, needle: str) -> None:
    code, log = _audit(tmp_path, audit)
    assert code != 0
    lines = [line for line in log.splitlines() if "dpbandits: error" in line]
    assert len(lines) == 1 and needle in lines[0], log[-2000:]


# Loaded by every Python process of the run (sitecustomize): Private-GLM's strict tree-node σ
# (`tree_calibration`, where it is defined and where the policy imported it) cut 10×.
WEAKEN_TREES = """
from dpbandits.policies import private_glm
from dpbandits.privacy import tree

_calibration = tree.tree_calibration


def _weakened(*args, **kwargs):
    sigma, sensitivity = _calibration(*args, **kwargs)
    return 0.1 * sigma, sensitivity


tree.tree_calibration = private_glm.tree_calibration = _weakened
"""


@pytest.mark.parametrize("weakened", [False, True])
def test_audit_target_names_the_tree_when_its_strict_noise_is_cut_tenfold(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, weakened: bool) -> None:
    if weakened:
        hook = tmp_path / "hook"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(WEAKEN_TREES)
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
            p for p in (str(hook), os.environ.get("PYTHONPATH")) if p))
    # --keep-going: the release checks of Private-GLM see the cut too (its ledger overspent,
    # naming the V tree's node); the mechanism audit must name the tree on its own
    code, log = _audit(tmp_path, {"select": ["tree"], "runs_scale": 0.1,
                                  "control_noise_scale": 0.1}, "--keep-going")
    failed = "AUDIT FAILED: EXCEEDS CLAIM: tree [strict] empirical ε ≥" in log
    released = "RELEASE CHECK FAILED: Private-GLM [strict]" in log and "'V-tree node'" in log
    assert (code != 0, failed, released) == (weakened,) * 3, log[-3000:]
    table = pd.read_csv(tmp_path / SMOKE_PAPER / "tables" / "privacy_audit.csv")
    strict = table[(table["key"] == "tree~strict")].iloc[0]
    assert strict["verdict"] == ("EXCEEDS CLAIM" if weakened else "ok")
