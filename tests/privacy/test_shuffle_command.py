"""The `privacy shuffle` CLI plug-in: labelled forward/inverse lines, safe rounding, notes."""

from __future__ import annotations

import argparse
import re

import pytest

from dpbandits.cli import main as cli_main
from dpbandits.errors import ConfigError
from dpbandits.privacy.amplification import amplified_epsilon, local_epsilon
from dpbandits.privacy.commands import CALCULATORS, shuffle
from dpbandits.privacy.commands._output import round_down, round_up

LINE = re.compile(r"^(\S+) = (\S+)  \((.*); (.*)\)$")


def run(argv: list[str], capsys) -> list[str]:
    parser = argparse.ArgumentParser()
    shuffle.add_arguments(parser)
    assert shuffle.main(parser.parse_args(argv)) == 0
    return capsys.readouterr().out.strip().splitlines()


def parse(text: str) -> tuple[str, float, str, str]:
    """(symbol, value, bound label, inputs) of one labelled line."""
    match = LINE.match(text)
    assert match, f"unlabelled output line: {text!r}"
    return match[1], float(match[2]), match[3], match[4]


FMT = "Feldman–McMillan–Talwar 2021"


def test_forward_and_inverse_values(capsys) -> None:
    """Known values of the bounds, printed as the exact value rounded in the safe direction."""
    assert CALCULATORS.get("shuffle") is shuffle
    (out,) = run(["--eps0", "4", "--n", "100000", "--delta", "1e-6"], capsys)
    symbol, value, bound, inputs = parse(out)
    assert (symbol, inputs) == ("ε", "n = 100000, ε0 = 4, δ = 1e-6")
    assert bound == f"central ε of the shuffled reports, rounded up; closed form, {FMT} Thm 3.1"
    exact = amplified_epsilon(4.0, 100000, 1e-6, "fmt_thm")
    assert exact == pytest.approx(0.534634, abs=1e-6)
    assert out.split()[2] == round_up(exact)
    (out,) = run(["--inverse", "--eps", "1", "--n", "10000", "--delta", "1e-6"], capsys)
    symbol, value, bound, inputs = parse(out)
    assert (symbol, inputs) == ("ε0", "n = 10000, ε = 1, δ = 1e-6")
    assert "rounded down" in bound and "Thm 3.1" in bound
    exact = local_epsilon(1.0, 10000, 1e-6, "fmt_thm")
    assert exact == pytest.approx(3.503714, abs=1e-6)
    assert out.split()[2] == round_down(exact)
    ref = ["--eps0", "1", "--n", "1000", "--delta", "1e-5", "--bound", "closed-form-ref"]
    (out,) = run(ref, capsys)
    assert amplified_epsilon(1.0, 1000, 1e-5, "fmt_ref") == pytest.approx(0.608836, abs=1e-6)
    assert out.split()[2] == round_up(amplified_epsilon(1.0, 1000, 1e-5, "fmt_ref"))
    assert "reference code" in parse(out)[2]
    (fmt,) = run(["--eps0", "1", "--n", "10000", "--delta", "1e-6", "--bound", "fmt"], capsys)
    assert 0.0528 < parse(fmt)[1] < 0.0536


def test_numerical_bound_line_as_in_the_issue(capsys) -> None:
    (out,) = run(["--eps0", "1", "--n", "1000", "--delta", "1e-5", "--bound", "fmt"], capsys)
    assert out.startswith("ε = 0.17336")
    assert out.endswith(f"(central ε of the shuffled reports, rounded up; numerical bound, "
                        f"{FMT}; n = 1000, ε0 = 1, δ = 1e-5)")


@pytest.mark.parametrize("eps0, n, delta, bound", [
    (4.0, 100000, 1e-6, "closed-form"), (1.0, 1000, 1e-5, "closed-form-ref"),
    (1.0, 1000, 1e-5, "fmt"), (0.3, 5000, 1e-6, "closed-form"),
])
def test_forward_rounds_the_guarantee_up(eps0: float, n: int, delta: float, bound: str,
                                         capsys) -> None:
    (out,) = run(["--eps0", repr(eps0), "--n", str(n), "--delta", repr(delta), "--bound",
                  bound], capsys)
    exact = amplified_epsilon(eps0, n, delta, shuffle.BOUND_NAMES[bound])
    assert exact <= parse(out)[1] <= exact * (1 + 1e-5)


@pytest.mark.parametrize("eps, n, delta, bound", [
    (1.0, 10000, 1e-6, "closed-form"), (0.5, 20000, 1e-6, "closed-form-ref"),
    (1.0, 10000, 1e-6, "fmt"), (3.0, 10000, 1e-6, "closed-form"),
])
def test_inverse_budget_is_rounded_down_and_meets_the_target(eps: float, n: int, delta: float,
                                                             bound: str, capsys) -> None:
    """The printed ε0, shuffled, stays within ε; it is the exact inverse rounded down."""
    (out,) = run(["--inverse", "--eps", repr(eps), "--n", str(n), "--delta", repr(delta),
                  "--bound", bound], capsys)
    name = shuffle.BOUND_NAMES[bound]
    printed = parse(out)[1]
    assert amplified_epsilon(printed, n, delta, name) <= eps
    exact = local_epsilon(eps, n, delta, name)
    assert exact * (1 - 1e-5) <= printed <= exact


@pytest.mark.parametrize("argv, reason", [
    (["--eps0", "100", "--n", "10", "--delta", "1e-5"],
     "n = 10 is too small for the closed form, which needs n > 16·ln(2/δ) = 195.3"),
    (["--eps0", "3", "--n", "1000", "--delta", "1e-5"],
     "the closed form applies only for ε0 ≤ ln(n/(16·ln(2/δ))) = 1.633"),
    (["--eps0", "100", "--n", "10", "--delta", "1e-5", "--bound", "fmt"],
     "the numerical bound gives no improvement at these inputs"),
    (["--inverse", "--eps", "1", "--n", "10", "--delta", "1e-6"],
     "n = 10 is too small for the closed form, which needs n > 16·ln(2/δ) = 232.2"),
])
def test_says_when_no_amplification_applies(argv: list[str], reason: str, capsys) -> None:
    result, note = run(argv, capsys)
    symbol, value, _, _ = parse(result)
    given = argv[argv.index("--eps0" if "--eps0" in argv else "--eps") + 1]
    assert value == float(given)  # ε = ε0: shuffling bought nothing
    assert note == f"no amplification applies: {reason}; the central ε equals the local ε0"


def test_no_note_when_amplification_is_real(capsys) -> None:
    assert len(run(["--eps0", "1", "--n", "100000", "--delta", "1e-6"], capsys)) == 1
    out = run(["--eps0", "5", "--n", "100", "--delta", "1e-5", "--bound", "fmt"], capsys)
    assert out[1] == "amplification is negligible here: the central ε is within 0.1 % of ε0"


def test_value_only_and_through_the_cli(capsys) -> None:
    argv = ["--eps0", "4", "--n", "100000", "--delta", "1e-6"]
    (labelled,) = run(argv, capsys)
    assert run([*argv, "--value-only"], capsys) == [labelled.split()[2]]
    assert cli_main(["privacy", "shuffle", *argv]) == 0
    assert capsys.readouterr().out.strip() == labelled


def test_bad_input(capsys) -> None:
    parser = argparse.ArgumentParser()
    shuffle.add_arguments(parser)
    for argv in (
        ["--eps0", "-1", "--n", "10", "--delta", "1e-6"],
        ["--eps0", "1", "--n", "0", "--delta", "1e-6"],
        ["--eps0", "1", "--n", "10", "--delta", "2"],
        ["--inverse", "--n", "10", "--delta", "1e-6"],
        ["--inverse", "--eps", "0", "--n", "10", "--delta", "1e-6"],
    ):
        with pytest.raises(ConfigError):
            shuffle.main(parser.parse_args(argv))
