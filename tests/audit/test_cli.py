"""`dpbandits audit`: the bound next to the claim, a loud failure and exit code on violation."""

from __future__ import annotations

import re

import pytest

from dpbandits.cli import main


def test_passing_audit_prints_bound_interval_and_claim(capsys: pytest.CaptureFixture) -> None:
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
    assert "100000 runs per input" in out


def test_under_noised_mechanism_fails_loudly(capsys: pytest.CaptureFixture) -> None:
    code = main(["audit", "laplace", "--eps", "1", "--delta", "0", "--runs", "100000",
                 "--noise-scale", "0.5"])
    out, err = capsys.readouterr()
    assert code == 1
    assert err.startswith("PRIVACY AUDIT FAILED: laplace [strict] leaks more than claimed")
    assert len(err.strip().splitlines()) == 1


def test_list_names_every_audit(capsys: pytest.CaptureFixture) -> None:
    assert main(["audit", "list"]) == 0
    out = capsys.readouterr().out
    names = {line.split("\t")[0] for line in out.strip().splitlines()}
    assert {"gaussian", "laplace"} <= names


@pytest.mark.parametrize(
    "argv, text",
    [
        (["audit", "laplace", "--delta", "0"], "--eps is required"),
        (["audit", "laplace", "--eps", "1"], "--delta is required"),
        (["audit", "laplace", "--eps", "0", "--delta", "0"], "epsilon = 0.0"),
        (["audit", "laplace", "--eps", "1", "--delta", "0", "--runs", "0"], "runs = 0"),
        (["audit", "laplace", "--eps", "1", "--delta", "0", "--confidence", "2"],
         "confidence = 2.0"),
        (["audit", "nope", "--eps", "1", "--delta", "0"], "unknown audit 'nope'"),
        (["audit", "gaussian", "--eps", "1", "--delta", "0"],
         "delta = 0.0 is not allowed for the Gaussian mechanism; must be > 0"),
        (["audit", "tree", "--eps", "1", "--delta", "0"],
         "delta = 0.0 is not allowed for the tree; must be > 0"),
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
