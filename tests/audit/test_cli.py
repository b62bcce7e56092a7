"""`dpbandits audit`: the table row (claim, bound, interval, runs, verdict) and its exit code."""

from __future__ import annotations

import re

import numpy as np
import pytest

from dpbandits.audit.registry import MECHANISMS
from dpbandits.audit.spec import AuditSamples, AuditSpec
from dpbandits.cli import main


def _leaky(epsilon: float, delta: float, runs: int, rng: np.random.Generator) -> AuditSamples:
    """A 'mechanism' that releases its input: ε = ∞ whatever it claims."""
    return AuditSamples(np.zeros(runs), np.ones(runs), epsilon, delta, "0 vs 1", "value")


def test_passing_audit_prints_bound_interval_claim_and_verdict(
    capsys: pytest.CaptureFixture,
) -> None:
    code = main(["audit", "laplace", "--eps", "1", "--delta", "0", "--runs", "100000",
                 "--seed", "3"])
    out, err = capsys.readouterr()
    assert code == 0
    assert err == ""
    assert "claimed ε = 1" in out
    match = re.search(r"empirical ε ≥ ([0-9.]+) at 95% confidence, interval \[([0-9.]+), "
                      r"([0-9.]+|inf)\]", out)
    assert match is not None, out
    lb, lo = float(match.group(1)), float(match.group(2))
    assert lb == lo and 0.8 < lb <= 1.0
    assert "100000 runs per input; verdict: ok" in out
    assert out.rstrip().endswith("OK: the empirical lower bound does not exceed the claimed ε")


def test_under_noised_run_is_a_control_and_is_caught(capsys: pytest.CaptureFixture) -> None:
    code = main(["audit", "laplace", "--eps", "1", "--delta", "0", "--runs", "100000",
                 "--noise-scale", "0.5"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "verdict: control caught" in out and "CONTROL CAUGHT" in out


def test_a_missed_control_fails_with_one_line(capsys: pytest.CaptureFixture) -> None:
    code = main(["audit", "laplace", "--eps", "1", "--delta", "0", "--runs", "20000",
                 "--noise-scale", "0.99"])
    out, err = capsys.readouterr()
    assert code == 1
    assert err.startswith("AUDIT CONTROL MISSED: laplace [strict, noise ×0.99]")
    assert len(err.strip().splitlines()) == 1


@pytest.fixture
def leaky_audit():
    """A registered 'mechanism' that releases its input, removed after the test."""
    MECHANISMS.add("leaky-test", AuditSpec("leaky-test", "mechanism", _leaky, 1000,
                                           "releases its input", ()))
    yield
    MECHANISMS.remove("leaky-test")


def test_a_strict_claim_exceeded_fails_loudly(capsys: pytest.CaptureFixture,
                                              leaky_audit: None) -> None:
    code = main(["audit", "leaky-test", "--eps", "1", "--delta", "1e-5"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "verdict: EXCEEDS CLAIM" in out
    assert err.startswith("PRIVACY AUDIT FAILED: leaky-test [strict] leaks more than claimed")
    assert len(err.strip().splitlines()) == 1


def test_policy_pair_through_the_cli(capsys: pytest.CaptureFixture) -> None:
    """The issue's pair at its default point: strict within its claim, paper flagged."""
    assert main(["audit", "Private-GLM@context-d2", "--runs", "60", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "claimed ε = 1 (δ = 0.02)" in out and "verdict: ok" in out
    assert "transcript_changed" in out
    assert main(["audit", "Private-GLM@context-d2", "--runs", "60", "--seed", "1",
                 "--accounting", "paper"]) == 0
    out = capsys.readouterr().out
    assert "verdict: flagged (paper)" in out and "ledger_epsilon = inf" in out


def test_list_names_every_audit(capsys: pytest.CaptureFixture) -> None:
    assert main(["audit", "list"]) == 0
    out = capsys.readouterr().out
    names = {line.split("\t")[0] for line in out.strip().splitlines()}
    assert {"gaussian", "laplace", "Private-GLM@context-d2", "AdaPrivate-TS@reward"} <= names


@pytest.mark.parametrize(
    "argv, text",
    [
        (["audit", "laplace", "--eps", "0", "--delta", "0"], "epsilon = 0.0"),
        (["audit", "laplace", "--eps", "1", "--delta", "0", "--runs", "0"], "runs = 0"),
        (["audit", "laplace", "--eps", "1", "--delta", "0", "--confidence", "2"],
         "confidence = 2.0"),
        (["audit", "nope", "--eps", "1", "--delta", "0"], "unknown audit 'nope'"),
        (["audit", "gaussian", "--eps", "1", "--delta", "0"],
         "delta = 0.0 is not allowed for the Gaussian mechanism; must be > 0"),
        (["audit", "tree", "--eps", "1", "--delta", "0"],
         "delta = 0.0 is not allowed for the tree; must be > 0"),
        (["audit", "laplace", "--option", "n50"], "--option 'n50' is not allowed"),
        (["audit", "laplace", "--option", "n=5"], "does not take option(s) n"),
    ],
)
def test_bad_flags_give_one_error_line(
    argv: list[str], text: str, capsys: pytest.CaptureFixture
) -> None:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert text in err


def test_unparsable_flag_exits_two(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as info:
        main(["audit", "laplace", "--eps", "abc", "--delta", "0"])
    assert info.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_release_checks_and_mutations_from_the_command_line(
        tmp_path, capsys: pytest.CaptureFixture) -> None:
    assert main(["audit", "--release-checks"]) == 0
    out, err = capsys.readouterr()
    assert "0 violation(s)" in out and err == ""
    path = tmp_path / "mutations.json"
    assert main(["audit", "--mutations", "--out", str(path)]) == 0
    out, _ = capsys.readouterr()
    assert "Mutation score of the release checks: 30 / 30 weakenings caught" in out
    assert path.read_text().count('"caught": true') == 30


def test_a_name_with_release_checks_is_one_error_line(capsys: pytest.CaptureFixture) -> None:
    assert main(["audit", "gaussian", "--mutations"]) != 0
    _, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == 1 and "take no name" in err
