"""The `privacy zcdp` CLI plug-in: ρ → ε (rounded up), ε → ρ (rounded down), labels, bad input."""

from __future__ import annotations

import argparse
import re

import pytest

from dpbandits.cli import main as cli_main
from dpbandits.privacy.commands import CALCULATORS, zcdp
from dpbandits.privacy.zcdp import (
    epsilon_from_rho,
    epsilon_from_rho_tight,
    rho_from_epsilon,
    rho_from_epsilon_tight,
)

LINE = re.compile(r"^(\S+) = (\S+)  \((.*); (.*)\)$")


def run_line(argv: list[str], capsys) -> tuple[str, str, str, str]:
    """(symbol, value text, bound label, inputs) of the one labelled line printed."""
    parser = argparse.ArgumentParser()
    zcdp.add_arguments(parser)
    assert zcdp.main(parser.parse_args(argv)) == 0
    (text,) = capsys.readouterr().out.strip().splitlines()
    match = LINE.match(text)
    assert match, f"unlabelled output line: {text!r}"
    return match[1], match[2], match[3], match[4]


def run(argv: list[str], capsys) -> float:
    return float(run_line(argv, capsys)[1])


# ε → (ρ classic, ρ tight) at δ = 1e-5 to 4 significant digits: ρ of the inverse of
# Bun–Steinke 2016 Prop. 1.3 and of the tight (dp-accounting RDP) conversion.
TABLE = [(0.1, 0.0002163, 0.000433), (0.5, 0.005314, 0.008506), (1, 0.02082, 0.03056),
         (2, 0.08005, 0.1083), (5, 0.4496, 0.5510), (10, 1.5504, 1.7827)]


@pytest.mark.parametrize("eps, rho, rho_tight", TABLE)
def test_eps_to_rho_and_back(eps: float, rho: float, rho_tight: float, capsys) -> None:
    assert CALCULATORS.get("zcdp") is zcdp
    got = run(["--eps", str(eps), "--delta", "1e-5"], capsys)
    assert got == pytest.approx(rho, rel=6e-4)
    assert run(["--rho", repr(got), "--delta", "1e-5"], capsys) == pytest.approx(eps, rel=1e-5)
    tight = run(["--eps", str(eps), "--delta", "1e-5", "--conversion", "tight"], capsys)
    assert tight == pytest.approx(rho_tight, rel=6e-3)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.2222222, 5.0, 10.0])
@pytest.mark.parametrize("conversion", ["classic", "tight"])
def test_printed_rho_meets_the_target(eps: float, conversion: str, capsys) -> None:
    """ρ is a budget: the printed ρ, converted back, stays within ε; it is the root rounded down."""
    forward = epsilon_from_rho_tight if conversion == "tight" else epsilon_from_rho
    inverse = rho_from_epsilon_tight if conversion == "tight" else rho_from_epsilon
    printed = run(["--eps", repr(eps), "--delta", "1e-5", "--conversion", conversion], capsys)
    assert forward(printed, 1e-5) <= eps
    root = inverse(eps, 1e-5)
    assert root * (1 - 1e-5) <= printed <= root


@pytest.mark.parametrize("rho", [0.0002163, 0.02082, 0.4496, 1.7827])
@pytest.mark.parametrize("conversion", ["classic", "tight"])
def test_printed_epsilon_is_rounded_up(rho: float, conversion: str, capsys) -> None:
    """ε is the cost of a given ρ: never printed below the conversion's value."""
    forward = epsilon_from_rho_tight if conversion == "tight" else epsilon_from_rho
    printed = run(["--rho", repr(rho), "--delta", "1e-5", "--conversion", conversion], capsys)
    exact = forward(rho, 1e-5)
    assert exact <= printed <= exact * (1 + 1e-5)


def test_labels_and_value_only(capsys) -> None:
    symbol, value, bound, inputs = run_line(["--eps", "1", "--delta", "1e-5"], capsys)
    assert (symbol, inputs) == ("ρ", "ε = 1, δ = 1e-5")
    assert "rounded down" in bound and "Bun–Steinke 2016 Prop. 1.3" in bound
    symbol, _, bound, inputs = run_line(["--rho", value, "--delta", "1e-5", "--conversion",
                                         "tight"], capsys)
    assert (symbol, inputs) == ("ε", f"ρ = {value}, δ = 1e-5")
    assert "rounded up" in bound and "Canonne–Kamath–Steinke 2020" in bound
    parser = argparse.ArgumentParser()
    zcdp.add_arguments(parser)
    assert zcdp.main(parser.parse_args(["--eps", "1", "--delta", "1e-5", "--value-only"])) == 0
    assert capsys.readouterr().out.strip() == value


def test_through_the_cli(capsys) -> None:
    assert cli_main(["privacy", "zcdp", "--rho", "0.4496", "--delta", "1e-5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ε = ")
    assert float(out.split()[2]) == pytest.approx(5.0, abs=1e-3)


@pytest.mark.parametrize("argv", [
    ["--eps", "0", "--delta", "1e-5"], ["--eps", "-1", "--delta", "1e-5"],
    ["--rho", "0.1", "--delta", "1.5"], ["--rho", "-0.1", "--delta", "1e-5"],
    ["--eps", "1", "--delta", "0"],
])
def test_bad_input_exit_2_one_line(argv: list[str], capsys) -> None:
    assert cli_main(["privacy", "zcdp", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dpbandits: error:") and "\n" not in err
